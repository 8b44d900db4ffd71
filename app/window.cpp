#include "app/window.h"

#include "app/cli/cli.h"
#include "views/mainwindow.h"

#include <QApplication>
#include <QIcon>
#include <QStringList>

#include <string>
#include <vector>

namespace oomlens {

int runWindow(int& argc, char** argv, bool offscreen)
{
    if (offscreen)
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("oomlens"));
    QApplication::setOrganizationName(QStringLiteral("oomlens"));
    QApplication::setApplicationVersion(QStringLiteral(OOMLENS_VERSION));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/oomlens/icons/oomlens.svg")));
    // After QApplication took out its own options (-platform, -style, ...).
    std::vector<std::string> arguments;
    for (const QString& argument : QApplication::arguments())
        arguments.push_back(argument.toStdString());
    const cli::GuiCommandLine commandLine = cli::parseGuiCommandLine(arguments);
    if (commandLine.exitStatus)
        return *commandLine.exitStatus;
    QStringList files;
    for (const std::string& file : commandLine.files)
        files.append(QString::fromStdString(file));
    const bool screenshots = !commandLine.screenshotDirectory.empty();
    MainWindow window;
    if (screenshots) {
        window.resize(1400, 900);
        QObject::connect(&window, &MainWindow::screenshotsWritten, &app, [&app](bool ok) { app.exit(ok ? 0 : 1); });
    }
    window.show();
    window.openFiles(files);
    if (screenshots)
        window.setScreenshotDirectory(QString::fromStdString(commandLine.screenshotDirectory));
    return app.exec();
}

} // namespace oomlens
