#include "app/cli/cli.h"

#ifdef OOMLENS_WITH_GUI
#include "views/mainwindow.h"
#include <QApplication>
#include <QIcon>
#endif
#include <QCoreApplication>

int main(int argc, char** argv)
{
    // The headless commands never touch a display: they run under QCoreApplication.
    if (oomlens::cli::isCommandLineInvocation(argc, argv)) {
        QCoreApplication app(argc, argv);
        return oomlens::cli::run(app.arguments());
    }
#ifdef OOMLENS_WITH_GUI
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
