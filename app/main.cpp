#include "app/cli/cli.h"

#ifdef OOMLENS_WITH_GUI
#include "views/mainwindow.h"
#include <QApplication>
#include <QIcon>
#endif
#include <QCoreApplication>

#include <cstring>

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
    QStringList files = app.arguments().mid(1);
    // `oomlens --screenshot DIR FILE...`: render every view to DIR as PNG and exit (README pictures).
    QString screenshotDirectory;
    if (files.size() >= 2 && files.front() == QLatin1String("--screenshot")) {
        screenshotDirectory = files.at(1);
        files = files.mid(2);
    }
    oomlens::MainWindow window;
    if (!screenshotDirectory.isEmpty()) {
        window.resize(1400, 900);
        QObject::connect(
            &window, &oomlens::MainWindow::screenshotsWritten, &app, [&app](bool ok) { app.exit(ok ? 0 : 1); });
    }
    window.show();
    window.openFiles(files);
    if (!screenshotDirectory.isEmpty())
        window.setScreenshotDirectory(screenshotDirectory);
    return app.exec();
#else
    return oomlens::cli::run(QCoreApplication(argc, argv).arguments());
#endif
}
