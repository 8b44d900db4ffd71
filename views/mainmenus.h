#pragma once

#include "views/casewidget.h"

#include <QObject>

class QAction;
class QMenuBar;
class QWidget;

namespace oomlens {

class RecentFiles;

// The application window's commands: the File, View, Go and Help menus with their shortcuts and
// tooltips, and the Help menu's own dialogs (the keyboard shortcuts, About). Each command is a
// signal; MainWindow decides what it does to the case on screen.
class MainMenus : public QObject
{
    Q_OBJECT
public:
    // Fills `bar`; Open Recent lists `recent`. `window` parents the dialogs and closes on Quit.
    MainMenus(QMenuBar* bar, RecentFiles* recent, QWidget* window);

    // The example case ships as a Qt resource, which a build may leave out.
    void setExampleAvailable(bool available);

signals:
    void openRequested(bool newCase); // File ▸ Open (true) or Add to Case (false)
    void openJobRequested();
    void openJobFolderRequested();
    void pasteRequested(bool newCase);
    void exampleRequested();
    void exportChartRequested();
    void exportReportRequested();
    void settingsRequested();
    void closeCaseRequested();
    void pageRequested(CaseWidget::Page page);
    void compareRequested();
    void cancelRequested();
    void peakRequested();
    void oomRequested();
    void searchRequested();

private:
    void addFileMenu(QMenuBar* bar, RecentFiles* recent);
    void addViewMenu(QMenuBar* bar);
    void addGoMenu(QMenuBar* bar);
    void addHelpMenu(QMenuBar* bar);
    void showShortcuts();
    void showAbout();

    QWidget* m_window;
    QAction* m_example = nullptr;
};

} // namespace oomlens
