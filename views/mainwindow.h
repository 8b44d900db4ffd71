#pragma once

#include <QMainWindow>

namespace oomlens {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    void openFiles(const QStringList& paths);
};

} // namespace oomlens
