#include "views/mainwindow.h"

namespace oomlens {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
{
    setWindowTitle(QStringLiteral("oomlens"));
}

void MainWindow::openFiles(const QStringList& paths)
{
    Q_UNUSED(paths);
}

} // namespace oomlens
