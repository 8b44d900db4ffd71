#include "views/mainwindow.h"

#include "views/casewidget.h"
#include "views/emptystatewidget.h"
#include "views/settingsdialog.h"
#include "views/snapshotfiles.h"
#include "views/timelinewidget.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

namespace oomlens {

namespace {

constexpr int maxRecentFiles = 10;
const QString exampleResource = QStringLiteral(":/oomlens/examples/oom_case.txt");

} // namespace

bool MainWindow::exampleAvailable()
{
    return QFileInfo::exists(exampleResource);
}

void MainWindow::createActions()
{
    QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
    QAction* open = file->addAction(QStringLiteral("&Open…"), this, [this] { openDialog(true); });
    open->setShortcut(QKeySequence::Open);
    open->setToolTip(QStringLiteral("Open snapshots, OOM messages, summaries or logs as a new case"));
    QAction* add = file->addAction(QStringLiteral("&Add to Case…"), this, [this] { openDialog(false); });
    add->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    QAction* openJob = file->addAction(QStringLiteral("Open &Job…"), this, &MainWindow::openJobDialog);
    openJob->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_J));
    openJob->setToolTip(QStringLiteral("Open the snapshot files of every rank of one job at once"));
    file->addAction(QStringLiteral("Open Job &Folder…"), this, &MainWindow::openJobFolderDialog)
        ->setToolTip(QStringLiteral("Every snapshot file in a folder, as the ranks of one job"));
    m_recentMenu = file->addMenu(QStringLiteral("Open &Recent"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    rebuildRecentMenu();
    file->addSeparator();
    QAction* paste = file->addAction(QStringLiteral("&Paste"), this, [this] { pasteFromClipboard(false); });
    paste->setShortcut(QKeySequence::Paste);
    paste->setToolTip(QStringLiteral("Paste an OOM traceback, memory_summary() or log into the current case"));
    QAction* pasteNew
        = file->addAction(QStringLiteral("Paste as &New Case"), this, [this] { pasteFromClipboard(true); });
    pasteNew->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V));
    QAction* example = file->addAction(QStringLiteral("Open &Example Case"), this, &MainWindow::openExample);
    example->setEnabled(exampleAvailable());
    file->addSeparator();
    QAction* exportChart = file->addAction(QStringLiteral("&Export Chart…"), this, [this] {
        CaseWidget* current = currentCase();
        if (!current)
            return;
        const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export chart"),
            QStringLiteral("timeline.png"), QStringLiteral("PNG image (*.png);;SVG drawing (*.svg)"));
        if (!path.isEmpty() && !current->timeline()->exportImage(path))
            showBanner({ QStringLiteral("Could not write %1").arg(path) });
    });
    exportChart->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    QAction* exportReport = file->addAction(QStringLiteral("Export &Report…"), this, &MainWindow::exportReportDialog);
    exportReport->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    exportReport->setToolTip(QStringLiteral("One self-contained HTML file to send to the team"));
    file->addSeparator();
    QAction* settings = file->addAction(QStringLiteral("&Settings…"), this, &MainWindow::showSettings);
    settings->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    settings->setMenuRole(QAction::PreferencesRole);
    QAction* close
        = file->addAction(QStringLiteral("&Close Case"), this, [this] { closeCase(m_cases->currentIndex()); });
    close->setShortcut(QKeySequence::Close);
    file->addSeparator();
    QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
    const std::pair<QString, CaseWidget::Page> pages[] = { { QStringLiteral("&Overview"), CaseWidget::OverviewTab },
        { QStringLiteral("&Timeline"), CaseWidget::TimelineTab },
        { QStringLiteral("&Events"), CaseWidget::EventsTab } };
    int number = 1;
    for (const auto& [name, page] : pages) {
        QAction* action = view->addAction(name, this, [this, page = page] {
            if (CaseWidget* current = currentCase())
                current->showPage(page);
        });
        action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_0 + number++)));
    }
    view->addSeparator();
    QAction* compare = view->addAction(QStringLiteral("&Compare…"), this, &MainWindow::openCompare);
    compare->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    compare->setToolTip(QStringLiteral("Two open snapshots, or two step windows of one, side by side"));
    view->addSeparator();
    QAction* cancel = view->addAction(QStringLiteral("Cancel Loading"), this, &MainWindow::cancelLoads);
    cancel->setShortcut(QKeySequence(Qt::Key_Escape));

    QMenu* go = menuBar()->addMenu(QStringLiteral("&Go"));
    QAction* peak = go->addAction(QStringLiteral("To the &Peak"), this, [this] {
        if (CaseWidget* current = currentCase(); current && !current->goToPeak())
            statusBar()->showMessage(QStringLiteral("This case has no snapshot timeline"), 4000);
    });
    peak->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    QAction* oom = go->addAction(QStringLiteral("To the &OOM"), this, [this] {
        if (CaseWidget* current = currentCase(); current && !current->goToOom())
            statusBar()->showMessage(QStringLiteral("No oom event in this snapshot"), 4000);
    });
    oom->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    QAction* find = go->addAction(QStringLiteral("&Search Stacks"), this, [this] {
        if (CaseWidget* current = currentCase())
            current->focusSearch();
    });
    find->setShortcut(QKeySequence::Find);

    QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
    QAction* keys = help->addAction(QStringLiteral("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(QStringLiteral("&About oomlens"), this, [this] {
        QMessageBox::about(this, QStringLiteral("About oomlens"),
            QStringLiteral("<b>oomlens %1</b><p>Explains PyTorch GPU out-of-memory failures from memory "
                           "snapshots, OOM messages and memory_summary() output.</p>")
                .arg(QApplication::applicationVersion()));
    });
}

void MainWindow::openDialog(bool newCase)
{
    const QString directory
        = recentFiles().isEmpty() ? QDir::homePath() : QFileInfo(recentFiles().front()).absolutePath();
    const QStringList paths = QFileDialog::getOpenFileNames(this,
        newCase ? QStringLiteral("Open as a new case") : QStringLiteral("Add to the current case"), directory,
        QStringLiteral("Snapshots and logs (*.pickle *.pkl *.pt *.gz *.json *.html *.txt *.log *.out *.err);;"
                       "All files (*)"));
    if (paths.isEmpty())
        return;
    QList<LoadRequest> requests;
    for (const QString& path : paths)
        requests << LoadRequest::file(path);
    CaseWidget* target = newCase ? nullptr : currentCase();
    load(target, requests, titleFor(requests));
}

void MainWindow::openJobDialog()
{
    const QString directory
        = recentFiles().isEmpty() ? QDir::homePath() : QFileInfo(recentFiles().front()).absolutePath();
    const QStringList paths = QFileDialog::getOpenFileNames(this, QStringLiteral("Open the rank files of one job"),
        directory, QStringLiteral("Snapshots (*.pickle *.pkl *.pt *.gz *.json);;All files (*)"));
    if (paths.isEmpty())
        return;
    if (paths.size() == 1) {
        openFiles(paths); // one rank is an ordinary case
        return;
    }
    openJob(paths);
}

void MainWindow::openJobFolderDialog()
{
    const QString directory
        = recentFiles().isEmpty() ? QDir::homePath() : QFileInfo(recentFiles().front()).absolutePath();
    const QString folder = QFileDialog::getExistingDirectory(this, QStringLiteral("Open a job's folder"), directory);
    if (folder.isEmpty())
        return;
    const QStringList files = snapshotFilesInFolder(folder);
    if (files.isEmpty()) {
        showBanner({ QStringLiteral("No snapshot files in %1").arg(folder) });
        return;
    }
    if (files.size() == 1)
        openFiles(files);
    else
        openJob(files);
}

void MainWindow::openExample()
{
    QFile file(exampleResource);
    if (!file.open(QIODevice::ReadOnly))
        return;
    load(nullptr, { LoadRequest::pasted(file.readAll()) }, QStringLiteral("Example case"));
}

QStringList MainWindow::recentFiles() const
{
    return QSettings().value(QStringLiteral("recentFiles")).toStringList();
}

void MainWindow::addRecent(const QStringList& paths)
{
    if (paths.isEmpty())
        return;
    QStringList recent = recentFiles();
    for (const QString& path : paths) {
        recent.removeAll(path);
        recent.prepend(path);
    }
    while (recent.size() > maxRecentFiles)
        recent.removeLast();
    QSettings().setValue(QStringLiteral("recentFiles"), recent);
    m_empty->setRecentFiles(recent);
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = recentFiles();
    for (const QString& path : recent)
        m_recentMenu->addAction(QFileInfo(path).fileName() + QStringLiteral("  —  ") + QFileInfo(path).absolutePath(),
            this, [this, path] { openFiles({ path }); });
    if (recent.isEmpty()) {
        m_recentMenu->addAction(QStringLiteral("(none)"))->setEnabled(false);
        return;
    }
    m_recentMenu->addSeparator();
    m_recentMenu->addAction(QStringLiteral("Clear"), this, [this] {
        QSettings().remove(QStringLiteral("recentFiles"));
        m_empty->setRecentFiles({});
    });
}

void MainWindow::showSettings()
{
    SettingsDialog dialog(m_settings, this);
    if (dialog.exec() == QDialog::Accepted)
        applySettings(dialog.settings());
}

void MainWindow::exportReportDialog()
{
    if (!currentTab())
        return;
    QString name = m_cases->tabText(m_cases->currentIndex()).section(QLatin1Char('.'), 0, 0);
    name.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_-]+")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export report"),
        QStringLiteral("%1-oom-report.html").arg(name.isEmpty() ? QStringLiteral("case") : name),
        QStringLiteral("HTML report (*.html)"));
    if (!path.isEmpty())
        exportReport(path);
}

void MainWindow::showShortcuts()
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
    QMessageBox box(QMessageBox::NoIcon, QStringLiteral("Keyboard shortcuts"), html, QMessageBox::Close, this);
    box.setTextFormat(Qt::RichText);
    box.exec();
}

} // namespace oomlens
