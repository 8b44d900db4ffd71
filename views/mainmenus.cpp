#include "views/mainmenus.h"

#include "views/recentfiles.h"

#include <QAction>
#include <QApplication>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>

namespace oomlens {

MainMenus::MainMenus(QMenuBar* bar, RecentFiles* recent, QWidget* window)
    : QObject(window)
    , m_window(window)
{
    addFileMenu(bar, recent);
    addViewMenu(bar);
    addGoMenu(bar);
    addHelpMenu(bar);
}

void MainMenus::setExampleAvailable(bool available)
{
    m_example->setEnabled(available);
}

void MainMenus::addFileMenu(QMenuBar* bar, RecentFiles* recent)
{
    QMenu* file = bar->addMenu(QStringLiteral("&File"));
    QAction* open = file->addAction(QStringLiteral("&Open…"), this, [this] { emit openRequested(true); });
    open->setShortcut(QKeySequence::Open);
    open->setToolTip(QStringLiteral("Open snapshots, OOM messages, summaries or logs as a new case"));
    QAction* add = file->addAction(QStringLiteral("&Add to Case…"), this, [this] { emit openRequested(false); });
    add->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    QAction* openJob = file->addAction(QStringLiteral("Open &Job…"), this, &MainMenus::openJobRequested);
    openJob->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_J));
    openJob->setToolTip(QStringLiteral("Open the snapshot files of every rank of one job at once"));
    file->addAction(QStringLiteral("Open Job &Folder…"), this, &MainMenus::openJobFolderRequested)
        ->setToolTip(QStringLiteral("Every snapshot file in a folder, as the ranks of one job"));
    recent->attachMenu(file->addMenu(QStringLiteral("Open &Recent")));
    file->addSeparator();
    QAction* paste = file->addAction(QStringLiteral("&Paste"), this, [this] { emit pasteRequested(false); });
    paste->setShortcut(QKeySequence::Paste);
    paste->setToolTip(QStringLiteral("Paste an OOM traceback, memory_summary() or log into the current case"));
    QAction* pasteNew
        = file->addAction(QStringLiteral("Paste as &New Case"), this, [this] { emit pasteRequested(true); });
    pasteNew->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V));
    m_example = file->addAction(QStringLiteral("Open &Example Case"), this, &MainMenus::exampleRequested);
    file->addSeparator();
    QAction* exportChart = file->addAction(QStringLiteral("&Export Chart…"), this, &MainMenus::exportChartRequested);
    exportChart->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction* exportReport = file->addAction(QStringLiteral("Export &Report…"), this, &MainMenus::exportReportRequested);
    exportReport->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    exportReport->setToolTip(QStringLiteral("One self-contained HTML file to send to the team"));
    file->addSeparator();
    QAction* settings = file->addAction(QStringLiteral("&Settings…"), this, &MainMenus::settingsRequested);
    settings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    settings->setMenuRole(QAction::PreferencesRole);
    QAction* close = file->addAction(QStringLiteral("&Close Case"), this, &MainMenus::closeCaseRequested);
    close->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(QStringLiteral("&Quit"), m_window, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
}

void MainMenus::addViewMenu(QMenuBar* bar)
{
    QMenu* view = bar->addMenu(QStringLiteral("&View"));
    const std::pair<QString, CaseWidget::Page> pages[] = { { QStringLiteral("&Overview"), CaseWidget::OverviewTab },
        { QStringLiteral("&Timeline"), CaseWidget::TimelineTab },
        { QStringLiteral("&Events"), CaseWidget::EventsTab } };
    int number = 1;
    for (const auto& [name, page] : pages) {
        QAction* action = view->addAction(name, this, [this, page = page] { emit pageRequested(page); });
        action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_0 + number++)));
    }
    view->addSeparator();
    QAction* compare = view->addAction(QStringLiteral("&Compare…"), this, &MainMenus::compareRequested);
    compare->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    compare->setToolTip(QStringLiteral("Two open snapshots, or two step windows of one, side by side"));
    view->addSeparator();
    QAction* cancel = view->addAction(QStringLiteral("Cancel Loading"), this, &MainMenus::cancelRequested);
    cancel->setShortcut(QKeySequence(Qt::Key_Escape));
}

void MainMenus::addGoMenu(QMenuBar* bar)
{
    QMenu* go = bar->addMenu(QStringLiteral("&Go"));
    QAction* peak = go->addAction(QStringLiteral("To the &Peak"), this, &MainMenus::peakRequested);
    peak->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    QAction* oom = go->addAction(QStringLiteral("To the &OOM"), this, &MainMenus::oomRequested);
    oom->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    QAction* find = go->addAction(QStringLiteral("&Search Stacks"), this, &MainMenus::searchRequested);
    find->setShortcut(QKeySequence::Find);
}

void MainMenus::addHelpMenu(QMenuBar* bar)
{
    QMenu* help = bar->addMenu(QStringLiteral("&Help"));
    QAction* keys = help->addAction(QStringLiteral("&Keyboard Shortcuts"), this, &MainMenus::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(QStringLiteral("&About oomlens"), this, &MainMenus::showAbout);
}

void MainMenus::showShortcuts()
{
    const std::pair<QString, QString> rows[] = {
        { QStringLiteral("Ctrl+O / Ctrl+Shift+O"), QStringLiteral("Open as a new case / add to the current case") },
        { QStringLiteral("Ctrl+V / Ctrl+Shift+V"),
            QStringLiteral("Paste a traceback, summary or log into the case / "
                           "as a new case") },
        { QStringLiteral("Ctrl+1, Ctrl+2, Ctrl+3"), QStringLiteral("Overview, Timeline, Events") },
        { QStringLiteral("Ctrl+Shift+C"), QStringLiteral("Compare two open snapshots, or two step windows of one") },
        { QStringLiteral("Ctrl+Shift+J"), QStringLiteral("Open the rank files of one job") },
        { QStringLiteral("Ctrl+P / Ctrl+M"), QStringLiteral("Move the cursor to the peak / to the OOM") },
        { QStringLiteral("Ctrl+F"), QStringLiteral("Search the stacks of the live allocations or events") },
        { QStringLiteral("Ctrl+E / Ctrl+Shift+E"), QStringLiteral("Export the chart (PNG, SVG) / the HTML report") },
        { QStringLiteral("Ctrl+,"), QStringLiteral("Settings") },
        { QStringLiteral("Ctrl+W"), QStringLiteral("Close the case") },
        { QStringLiteral("Esc"), QStringLiteral("Cancel loading") },
        { QStringLiteral("Wheel, drag"), QStringLiteral("Zoom and pan the timeline; Shift+drag zooms to an area") },
        { QStringLiteral("← → / + − / Home"), QStringLiteral("Timeline: pan / zoom / whole trace") },
        { QStringLiteral("Shift+← →"), QStringLiteral("Timeline: move the cursor one event") },
    };
    QString html = QStringLiteral("<table cellspacing='6'>");
    for (const auto& [keys, meaning] : rows)
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                    .arg(keys.toHtmlEscaped(), meaning.toHtmlEscaped());
    html += QStringLiteral("</table>");
    QMessageBox box(QMessageBox::NoIcon, QStringLiteral("Keyboard shortcuts"), html, QMessageBox::Close, m_window);
    box.setTextFormat(Qt::RichText);
    box.exec();
}

void MainMenus::showAbout()
{
    QMessageBox::about(m_window, QStringLiteral("About oomlens"),
        QStringLiteral("<b>oomlens %1</b><p>Explains PyTorch GPU out-of-memory failures from memory "
                       "snapshots, OOM messages and memory_summary() output.</p>")
            .arg(QApplication::applicationVersion()));
}

} // namespace oomlens
