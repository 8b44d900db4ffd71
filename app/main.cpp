#include "app/cli/cli.h"
#include "app/cli/launch.h"
#include "app/cli/truncatedinput.h"

#ifdef OOMLENS_WITH_GUI
#include "views/mainwindow.h"
#include <QApplication>
#include <QIcon>
#endif
#include <QCoreApplication>

#include <cstdio>
#include <cstdlib>
#include <span>

int main(int argc, char** argv)
{
    oomlens::cli::reportTruncatedInputs();
    // Decided before any application object exists: the headless commands never touch a display,
    // and a window is only attempted where one can open (QApplication aborts otherwise).
    const std::span<const char* const> arguments(argv, size_t(argc));
    const oomlens::cli::Launch launch
        = oomlens::cli::decideLaunch(arguments, oomlens::cli::DisplayEnvironment::current(arguments));
    if (launch.kind == oomlens::cli::Launch::Kind::Stop) {
        std::fputs(launch.message.toUtf8().constData(), stderr);
        return launch.exitStatus;
    }
    if (launch.kind == oomlens::cli::Launch::Kind::Command) {
        QCoreApplication app(argc, argv);
        return oomlens::cli::run(app.arguments());
    }
#ifdef OOMLENS_WITH_GUI
    if (launch.offscreen)
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("oomlens"));
    QApplication::setOrganizationName(QStringLiteral("oomlens"));
    QApplication::setApplicationVersion(QStringLiteral(OOMLENS_VERSION));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/oomlens/icons/oomlens.svg")));
    // After QApplication took out its own options (-platform, -style, ...).
    const oomlens::cli::GuiCommandLine commandLine = oomlens::cli::parseGuiCommandLine(app.arguments());
    if (commandLine.exitStatus)
        return *commandLine.exitStatus;
    const bool screenshots = !commandLine.screenshotDirectory.isEmpty();
    oomlens::MainWindow window;
    if (screenshots) {
        window.resize(1400, 900);
        QObject::connect(
            &window, &oomlens::MainWindow::screenshotsWritten, &app, [&app](bool ok) { app.exit(ok ? 0 : 1); });
    }
    window.show();
    window.openFiles(commandLine.files);
    if (screenshots)
        window.setScreenshotDirectory(commandLine.screenshotDirectory);
    return app.exec();
#else
    QCoreApplication app(argc, argv);
    return oomlens::cli::run(app.arguments());
#endif
}
