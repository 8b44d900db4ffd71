#include "app/cli/cli.h"

#ifdef OOMLENS_WITH_GUI
#include "views/mainwindow.h"
#include <QApplication>
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
    oomlens::MainWindow window;
    window.show();
    window.openFiles(app.arguments().mid(1));
    return app.exec();
#else
    return oomlens::cli::run(QCoreApplication(argc, argv).arguments());
#endif
}
