#include "views/mainwindow.h"

#include "opening/inputrequests.h"
#include "opening/jobfiles.h"
#include "opening/opening.h"
#include "opening/reportwriter.h"
#include "views/casewidget.h"
#include "views/compareview.h"
#include "views/emptystatewidget.h"
#include "views/errorbanner.h"
#include "views/jobview.h"
#include "views/mainmenus.h"
#include "views/overviewpage.h"
#include "views/recentfiles.h"
#include "views/settingsdialog.h"
#include "views/startuptrace.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"
#include "views/whatifview.h"
#include "views/windowscreenshots.h"

#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>

namespace oomlens {

namespace {

const QString exampleResource = QStringLiteral(":/oomlens/examples/oom_case.txt");

// The files among a job's inputs given beside its ranks: the Job view reads them with the failing rank.
QStringList filesOf(const std::vector<LoadRequest>& requests)
{
    QStringList files;
    for (const LoadRequest& request : requests) {
        if (request.isFile())
            files << toQString(request.path);
    }
    return files;
}

} // namespace

bool MainWindow::exampleAvailable()
{
    return QFileInfo::exists(exampleResource);
}

QString MainWindow::titleFor(const QList<LoadRequest>& requests)
{
    if (requests.isEmpty())
        return QStringLiteral("Case");
    const QString first = requests.front().path.empty() ? QStringLiteral("Pasted text")
                                                        : QFileInfo(toQString(requests.front().path)).fileName();
    return requests.size() == 1 ? first : QStringLiteral("%1 +%2").arg(first).arg(requests.size() - 1);
}

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
{
    setWindowTitle(QStringLiteral("oomlens"));
    setAcceptDrops(true);
    resize(1280, 860);

    m_settings = AppSettings::load();
    m_settings.applyColors();
    m_loader = new CaseLoader(this);
    connect(m_loader, &CaseLoader::progressChanged, this, &MainWindow::onProgress);
    connect(m_loader, &CaseLoader::timelineReady, this, &MainWindow::onTimelineReady);
    connect(m_loader, &CaseLoader::finished, this, &MainWindow::onFinished);

    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    m_banner = new ErrorBanner(central);
    layout->addWidget(m_banner);

    m_stack = new QStackedWidget(central);
    m_empty = new EmptyStateWidget(m_stack);
    m_empty->setExampleAvailable(exampleAvailable());
    m_cases = new QTabWidget(m_stack);
    m_cases->setTabsClosable(true);
    m_cases->setMovable(true);
    m_stack->addWidget(m_empty);
    m_stack->addWidget(m_cases);
    layout->addWidget(m_stack, 1);
    setCentralWidget(central);
    central->installEventFilter(this);

    m_progressText = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(false);
    m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
    m_cancel->setToolTip(QStringLiteral("Stop loading (Esc)"));
    statusBar()->addPermanentWidget(m_progressText);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, &MainWindow::cancelLoads);

    connect(m_empty, &EmptyStateWidget::openRequested, this, [this] { openDialog(true); });
    connect(m_empty, &EmptyStateWidget::pasteRequested, this, [this] { pasteFromClipboard(true); });
    connect(m_empty, &EmptyStateWidget::exampleRequested, this, &MainWindow::openExample);
    connect(m_empty, &EmptyStateWidget::recentRequested, this, [this](const QString& path) { openFiles({ path }); });
    connect(m_cases, &QTabWidget::tabCloseRequested, this, &MainWindow::closeCase);
    connect(m_cases, &QTabWidget::currentChanged, this, &MainWindow::updateState);

    m_recent = new RecentFiles(this);
    connect(m_recent, &RecentFiles::openRequested, this, &MainWindow::openFiles);
    connect(m_recent, &RecentFiles::changed, m_empty, &EmptyStateWidget::setRecentFiles);
    connectMenus(new MainMenus(menuBar(), m_recent, this));
    m_empty->setRecentFiles(m_recent->paths());
    updateState();
}

void MainWindow::connectMenus(MainMenus* menus)
{
    menus->setExampleAvailable(exampleAvailable());
    connect(menus, &MainMenus::openRequested, this, &MainWindow::openDialog);
    connect(menus, &MainMenus::openJobRequested, this, &MainWindow::openJobDialog);
    connect(menus, &MainMenus::openJobFolderRequested, this, &MainWindow::openJobFolderDialog);
    connect(menus, &MainMenus::pasteRequested, this, &MainWindow::pasteFromClipboard);
    connect(menus, &MainMenus::exampleRequested, this, &MainWindow::openExample);
    connect(menus, &MainMenus::exportChartRequested, this, &MainWindow::exportChartDialog);
    connect(menus, &MainMenus::exportReportRequested, this, &MainWindow::exportReportDialog);
    connect(menus, &MainMenus::settingsRequested, this, &MainWindow::showSettings);
    connect(menus, &MainMenus::closeCaseRequested, this, [this] { closeCase(m_cases->currentIndex()); });
    connect(menus, &MainMenus::pageRequested, this, [this](CaseWidget::Page page) {
        if (CaseWidget* current = currentCase())
            current->showPage(page);
    });
    connect(menus, &MainMenus::compareRequested, this, &MainWindow::openCompare);
    connect(menus, &MainMenus::cancelRequested, this, &MainWindow::cancelLoads);
    connect(menus, &MainMenus::peakRequested, this, [this] {
        if (CaseWidget* current = currentCase(); current && !current->goToPeak())
            statusBar()->showMessage(QStringLiteral("This case has no snapshot timeline"), 4000);
    });
    connect(menus, &MainMenus::oomRequested, this, [this] {
        if (CaseWidget* current = currentCase(); current && !current->goToOom())
            statusBar()->showMessage(QStringLiteral("No oom event in this snapshot"), 4000);
    });
    connect(menus, &MainMenus::searchRequested, this, [this] {
        if (CaseWidget* current = currentCase())
            current->focusSearch();
    });
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == centralWidget() && event->type() == QEvent::Paint) {
        markStartup(StartupMark::WindowPainted);
        watched->removeEventFilter(this);
        // The window is on screen: build the first case's widgets while its file is read.
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (!m_spareCase && caseCount() == 0) {
                    m_spareCase = new CaseWidget(m_cases);
                    m_spareCase->hide();
                    m_spareCase->ensurePolished();
                }
            },
            Qt::QueuedConnection);
    }
    return QMainWindow::eventFilter(watched, event);
}

MainWindow::~MainWindow()
{
    m_loader->cancelAll();
    m_loader->waitForAll();
}

void MainWindow::openFiles(const QStringList& paths)
{
    if (paths.isEmpty())
        return;
    QStringList absolute;
    for (const QString& path : paths)
        absolute << QFileInfo(path).absoluteFilePath();
    const std::vector<LoadRequest> requests = requestsFor(toStdStrings(absolute));
    if (const JobInputs job = jobInputsAmong(requests); job.isJob()) {
        openJob(toQStringList(job.rankFiles), filesOf(job.beside));
        return;
    }
    const QList<LoadRequest> caseRequests(requests.begin(), requests.end());
    load(nullptr, caseRequests, titleFor(caseRequests));
}

JobView* MainWindow::openJob(const QStringList& rankFiles, const QStringList& beside)
{
    if (rankFiles.isEmpty())
        return nullptr;
    m_recent->add(rankFiles + beside);
    auto* job = new JobView(m_cases);
    const QString title = QStringLiteral("Job: %1 ranks").arg(rankFiles.size());
    const int index = m_cases->addTab(job, title);
    m_cases->setTabToolTip(index, QFileInfo(rankFiles.front()).absolutePath());
    m_cases->setCurrentIndex(index);
    connect(job, &JobView::openRankRequested, this, [this](const QString& file) { openFiles({ file }); });
    connect(job, &JobView::finished, this, [this, job] {
        if (job->wasCancelled()) {
            statusBar()->showMessage(QStringLiteral("Job summary cancelled"), 5000);
            return;
        }
        QStringList unreadable;
        for (const InputFailure& failure : job->failures())
            unreadable << toQString(failureLine(failure, FailureReader::Banner));
        if (!unreadable.isEmpty())
            showBanner(unreadable);
        statusBar()->showMessage(job->headline(), 10000);
    });
    job->start(rankFiles, m_settings.analysisOptions(), beside);
    updateState();
    return job;
}

QList<CompareCandidate> MainWindow::compareCandidates() const
{
    QList<CompareCandidate> candidates;
    for (int i = 0; i < m_cases->count(); ++i) {
        const CaseWidget* widget = caseAt(i);
        if (!widget || !widget->loadedCase())
            continue;
        const AnalyzedCasePtr loaded = widget->loadedCase();
        const size_t snapshots = loaded->analysis.snapshots.size();
        for (size_t s = 0; s < snapshots; ++s) {
            const SnapshotAnalysis& analysis = loaded->analysis.snapshots[s];
            if (!analysis.primary())
                continue;
            QString label = m_cases->tabText(i);
            if (snapshots > 1)
                label += QStringLiteral(" · snapshot %1").arg(s + 1);
            candidates.append({ label, loaded, int(s) });
        }
    }
    return candidates;
}

CompareView* MainWindow::compareView() const
{
    for (int i = 0; i < m_cases->count(); ++i) {
        if (auto* view = qobject_cast<CompareView*>(m_cases->widget(i)))
            return view;
    }
    return nullptr;
}

CompareView* MainWindow::openCompare()
{
    CompareView* view = compareView();
    if (!view) {
        view = new CompareView(m_cases);
        m_cases->addTab(view, QStringLiteral("Compare"));
        view->setCandidates(compareCandidates());
    }
    m_cases->setCurrentWidget(view);
    statusBar()->clearMessage(); // the hint to compare has been taken
    if (view->candidates().isEmpty())
        statusBar()->showMessage(
            QStringLiteral("Open two snapshots (or one with steps) to compare: File ▸ Open, or drop them here"), 8000);
    updateState();
    return view;
}

void MainWindow::refreshCompareCandidates()
{
    if (CompareView* view = compareView())
        view->setCandidates(compareCandidates());
}

void MainWindow::hintCompare()
{
    int snapshotCases = 0;
    for (int i = 0; i < m_cases->count(); ++i) {
        const CaseWidget* widget = caseAt(i);
        snapshotCases += widget && widget->loadedCase() && !widget->loadedCase()->analysis.snapshots.empty() ? 1 : 0;
    }
    if (snapshotCases == 2 && !compareView())
        statusBar()->showMessage(
            QStringLiteral("Two snapshots are open: View ▸ Compare (Ctrl+Shift+C) shows what changed between them"),
            15000);
}

void MainWindow::load(CaseWidget* target, const QList<LoadRequest>& requests, const QString& title)
{
    if (requests.isEmpty() && !target)
        return;
    // A newer load into the same case supersedes the older one: cancel it, drop its result.
    if (target) {
        for (auto it = m_pending.begin(); it != m_pending.end();) {
            if (it->target == target) {
                m_loader->cancel(it.key());
                it = m_pending.erase(it);
            } else {
                ++it;
            }
        }
    }
    QStringList files;
    for (const LoadRequest& request : requests) {
        if (!request.path.empty())
            files << toQString(request.path);
    }
    m_recent->add(files);
    // A case still being diagnosed takes more inputs from its inputs as read so far.
    const AnalyzedCasePtr base = !target ? nullptr
        : target->loadedCase()           ? target->loadedCase()
                                         : target->caseBeingDiagnosed();
    const int id = m_loader->start(base, requests, title, m_settings.analysisOptions());
    m_pending.insert(id, { target, target == nullptr });
    m_latestJob = id;
    m_progress->setValue(0);
    m_progressText->setText(
        requests.isEmpty() ? QStringLiteral("Analyzing again…") : QStringLiteral("Loading %1…").arg(title));
    updateState();
}

void MainWindow::pasteFromClipboard(bool newCase)
{
    const QString text = QApplication::clipboard()->text();
    if (text.trimmed().isEmpty()) {
        showBanner({ QStringLiteral("The clipboard holds no text. Copy the OOM traceback, memory_summary() output or "
                                    "log, then paste again.") });
        return;
    }
    CaseWidget* target = newCase ? nullptr : currentCase();
    load(target, { LoadRequest::pasted(text.toStdString()) }, target ? QString() : nextPasteTitle());
}

QString MainWindow::nextPasteTitle()
{
    ++m_pasteCount;
    return m_pasteCount == 1 ? QStringLiteral("Pasted text") : QStringLiteral("Pasted text %1").arg(m_pasteCount);
}

void MainWindow::openDialog(bool newCase)
{
    const QString directory = m_recent->lastFolder();
    const QStringList paths = QFileDialog::getOpenFileNames(this,
        newCase ? QStringLiteral("Open as a new case") : QStringLiteral("Add to the current case"), directory,
        QStringLiteral("Snapshots and logs (*.pickle *.pkl *.pt *.gz *.json *.html *.txt *.log *.out *.err);;"
                       "All files (*)"));
    if (paths.isEmpty())
        return;
    QList<LoadRequest> requests;
    for (const QString& path : paths)
        requests << LoadRequest::file(path.toStdString());
    CaseWidget* target = newCase ? nullptr : currentCase();
    load(target, requests, titleFor(requests));
}

void MainWindow::openJobDialog()
{
    const QString directory = m_recent->lastFolder();
    const QStringList paths = QFileDialog::getOpenFileNames(this, QStringLiteral("Open the rank files of one job"),
        directory, QStringLiteral("Snapshots (*.pickle *.pkl *.pt *.gz *.json);;All files (*)"));
    // The same rule as everywhere (one rank is an ordinary case; a log picked with the ranks
    // belongs to the failing one).
    openFiles(paths);
}

void MainWindow::openJobFolderDialog()
{
    const QString directory = m_recent->lastFolder();
    const QString folder = QFileDialog::getExistingDirectory(this, QStringLiteral("Open a job's folder"), directory);
    if (folder.isEmpty())
        return;
    const QStringList files = toQStringList(jobFilesInFolder(folder.toStdString()));
    if (files.isEmpty()) {
        showBanner({ QStringLiteral("No snapshot or rank summary files in %1").arg(folder) });
        return;
    }
    openFiles(files);
}

void MainWindow::openExample()
{
    QFile file(exampleResource);
    if (!file.open(QIODevice::ReadOnly))
        return;
    load(nullptr, { LoadRequest::pasted(file.readAll().toStdString()) }, QStringLiteral("Example case"));
}

void MainWindow::showSettings()
{
    SettingsDialog dialog(m_settings, this);
    if (dialog.exec() == QDialog::Accepted)
        applySettings(dialog.settings());
}

void MainWindow::exportChartDialog()
{
    CaseWidget* current = currentCase();
    if (!current)
        return;
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export chart"),
        QStringLiteral("timeline.png"), QStringLiteral("PNG image (*.png);;SVG drawing (*.svg)"));
    if (!path.isEmpty() && !current->timeline()->exportImage(path))
        showBanner({ QStringLiteral("Could not write %1").arg(path) });
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

void MainWindow::onProgress(int jobId, int permille, const QString& text)
{
    if (jobId != m_latestJob)
        return;
    m_progress->setValue(permille);
    if (!text.isEmpty())
        m_progressText->setText(text);
}

bool MainWindow::isLoading() const
{
    if (!m_pending.isEmpty())
        return true;
    for (int i = 0; i < m_cases->count(); ++i) {
        if (const CaseWidget* view = caseAt(i); view && !view->overview()->isFilled())
            return true;
    }
    return false;
}

CaseWidget* MainWindow::takeCaseWidget()
{
    CaseWidget* widget = m_spareCase ? m_spareCase.data() : new CaseWidget(m_cases);
    m_spareCase.clear();
    widget->timeline()->setPreferredAxis(
        m_settings.eventAxis ? TimelineWidget::Axis::Events : TimelineWidget::Axis::Time);
    return widget;
}

void MainWindow::onTimelineReady(int jobId, const TimelineFirst& first)
{
    // Only a new case opens early: a case on screen keeps showing its last whole analysis.
    const auto it = m_pending.find(jobId);
    if (it == m_pending.end() || it->target || !it->newCase)
        return;
    CaseWidget* widget = takeCaseWidget();
    widget->showTimelineFirst(first);
    const int index = m_cases->addTab(widget, toQString(first.partial->title));
    m_cases->setCurrentIndex(index);
    // The rest of this load completes that widget; closing it drops the rest (closeCase).
    it->target = widget;
    it->newCase = false;
    updateState();
}

void MainWindow::onFinished(int jobId, const LoadOutcome& outcome)
{
    const auto it = m_pending.find(jobId);
    if (it == m_pending.end())
        return; // superseded or cancelled by a newer load: its result no longer matters
    const Pending pending = *it;
    m_pending.erase(it);
    // A timeline shown first whose diagnosis will not come (cancelled, failed) goes with its load.
    if (pending.target && pending.target->awaitingDiagnosis() && (outcome.cancelled || !outcome.loaded)) {
        m_cases->removeTab(m_cases->indexOf(pending.target));
        pending.target->deleteLater();
    }

    if (outcome.cancelled) {
        statusBar()->showMessage(QStringLiteral("Loading cancelled"), 5000);
    } else {
        QStringList problems = outcome.errors;
        if (outcome.loaded) {
            // A rules file that stopped parsing must not fail silently: the bands would lie.
            for (const SnapshotAnalysis& snapshot : outcome.loaded->analysis.snapshots) {
                const QString error = QString::fromStdString(snapshot.rulesError);
                const QString line = QStringLiteral("Category rules not applied (%1): %2 — fix the file or clear it "
                                                    "in Settings.")
                                         .arg(m_settings.rulesPath, error);
                if (!error.isEmpty() && !problems.contains(line))
                    problems << line;
            }
        }
        if (!problems.isEmpty())
            showBanner(problems);
        else
            m_banner->dismiss();
        if (outcome.loaded) {
            markStartup(StartupMark::CaseComplete);
            CaseWidget* widget = pending.target;
            if (!widget && !pending.newCase) {
                // The case was closed while loading: nothing to update.
            } else if (!widget) {
                // Placed before it is filled: the pages are then laid out once, at the tab's size.
                widget = takeCaseWidget();
                const int index = m_cases->addTab(widget, toQString(outcome.loaded->title));
                m_cases->setCurrentIndex(index);
                widget->setCase(outcome.loaded);
            } else {
                widget->setCase(outcome.loaded);
                m_cases->setTabText(m_cases->indexOf(widget), toQString(outcome.loaded->title));
            }
            if (widget) {
                const qsizetype inputs = qsizetype(outcome.loaded->input.inputs.size());
                statusBar()->showMessage(QStringLiteral("%1: %2 input(s), %3 diagnosis(es)")
                                             .arg(toQString(outcome.loaded->title))
                                             .arg(inputs)
                                             .arg(outcome.loaded->analysis.diagnoses.size()),
                    8000);
                refreshCompareCandidates();
                hintCompare();
            }
        }
    }
    updateState();
    if (m_pending.isEmpty()) {
        emit loadFinished();
        if (!m_screenshotDirectory.isEmpty()) {
            const QString directory = m_screenshotDirectory;
            m_screenshotDirectory.clear();
            // Let the views lay out and the plot replot before grabbing them.
            QMetaObject::invokeMethod(
                this, [this, directory] { emit screenshotsWritten(!writeScreenshots(directory).isEmpty()); },
                Qt::QueuedConnection);
        }
    }
}

void MainWindow::showBanner(const QStringList& lines)
{
    m_banner->showLines(lines);
    statusBar()->showMessage(lines.value(0), 10000);
}

QString MainWindow::bannerText() const
{
    return m_banner->text();
}

void MainWindow::updateState()
{
    const bool loading = !m_pending.isEmpty();
    m_progress->setVisible(loading);
    m_progressText->setVisible(loading);
    m_cancel->setVisible(loading);
    m_stack->setCurrentWidget(m_cases->count() > 0 ? static_cast<QWidget*>(m_cases) : m_empty);
    if (m_cases->currentIndex() >= 0)
        setWindowTitle(QStringLiteral("%1 — oomlens").arg(m_cases->tabText(m_cases->currentIndex())));
    else
        setWindowTitle(QStringLiteral("oomlens"));
}

void MainWindow::cancelLoads()
{
    // Esc stops the job being summarized on screen too.
    if (JobView* job = currentJob(); job && job->isBusy())
        job->cancel();
    if (m_pending.isEmpty())
        return;
    for (auto it = m_pending.cbegin(); it != m_pending.cend(); ++it)
        m_loader->cancel(it.key());
    m_progressText->setText(QStringLiteral("Cancelling…"));
}

void MainWindow::closeCase(int index)
{
    QWidget* tab = m_cases->widget(index);
    auto* widget = qobject_cast<CaseWidget*>(tab);
    if (!widget) {
        if (!tab)
            return;
        // A Compare or Job tab: its computation holds its own data and is dropped when it ends.
        if (auto* job = qobject_cast<JobView*>(tab))
            job->cancel();
        m_cases->removeTab(index);
        tab->deleteLater();
        updateState();
        return;
    }
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
        if (it->target == widget) {
            m_loader->cancel(it.key());
            it->newCase = false;
        }
    }
    m_cases->removeTab(index);
    widget->deleteLater();
    // The Compare view lets go of the closed case's snapshots once it no longer offers them.
    QMetaObject::invokeMethod(this, &MainWindow::refreshCompareCandidates, Qt::QueuedConnection);
    updateState();
}

int MainWindow::caseCount() const
{
    int cases = 0;
    for (int i = 0; i < m_cases->count(); ++i)
        cases += caseAt(i) ? 1 : 0;
    return cases;
}

int MainWindow::tabCount() const
{
    return m_cases->count();
}

QWidget* MainWindow::currentTab() const
{
    return m_cases->currentWidget();
}

JobView* MainWindow::currentJob() const
{
    return qobject_cast<JobView*>(m_cases->currentWidget());
}

CaseWidget* MainWindow::currentCase() const
{
    return qobject_cast<CaseWidget*>(m_cases->currentWidget());
}

CaseWidget* MainWindow::caseAt(int index) const
{
    return qobject_cast<CaseWidget*>(m_cases->widget(index));
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls() || event->mimeData()->hasText())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QMimeData* mime = event->mimeData();
    QList<LoadRequest> requests;
    QStringList skipped;
    for (const QUrl& url : mime->urls()) {
        if (url.isLocalFile())
            requests << LoadRequest::file(url.toLocalFile().toStdString());
        else
            skipped << url.toString();
    }
    if (requests.isEmpty() && skipped.isEmpty() && mime->hasText())
        requests << LoadRequest::pasted(mime->text().toStdString());
    if (!skipped.isEmpty())
        showBanner({ QStringLiteral("Only local files can be opened; download first: %1")
                         .arg(skipped.join(QStringLiteral(", "))) });
    if (requests.isEmpty())
        return;
    event->acceptProposedAction();
    // Several snapshots dropped together are the ranks of one job, a log dropped with them the
    // failing rank's (hold Shift to add them all to the current case instead).
    if (!(event->modifiers() & Qt::ShiftModifier)) {
        if (const JobInputs job = jobInputsAmong({ requests.begin(), requests.end() }); job.isJob()) {
            openJob(toQStringList(job.rankFiles), filesOf(job.beside));
            statusBar()->showMessage(QStringLiteral("%1 snapshot files dropped together: opened as one job (hold "
                                                    "Shift while dropping to add them to the current case)")
                                         .arg(job.rankFiles.size()),
                10000);
            return;
        }
    }
    // Dropping on an open case adds to it; hold Ctrl to open a separate case.
    CaseWidget* target = (event->modifiers() & Qt::ControlModifier) ? nullptr : currentCase();
    const QString title = requests.front().path.empty() && !target ? nextPasteTitle() : titleFor(requests);
    load(target, requests, title);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    m_loader->cancelAll();
    QMainWindow::closeEvent(event);
}

void MainWindow::setScreenshotDirectory(const QString& directory)
{
    m_screenshotDirectory = directory;
    if (m_pending.isEmpty()) {
        m_screenshotDirectory.clear();
        QMetaObject::invokeMethod(
            this, [this, directory] { emit screenshotsWritten(!writeScreenshots(directory).isEmpty()); },
            Qt::QueuedConnection);
    }
}

QStringList MainWindow::writeScreenshots(const QString& directory)
{
    return writeWindowScreenshots(*this, directory);
}

void MainWindow::applySettings(const AppSettings& settings)
{
    const bool reanalyze = !settings.sameAnalysis(m_settings);
    m_settings = settings;
    m_settings.save();
    m_settings.applyColors();
    const auto axis = m_settings.eventAxis ? TimelineWidget::Axis::Events : TimelineWidget::Axis::Time;
    for (int i = 0; i < m_cases->count(); ++i) {
        CaseWidget* widget = caseAt(i);
        if (!widget)
            continue; // a Compare or Job tab
        widget->timeline()->setPreferredAxis(axis);
        widget->timeline()->setAxis(axis);
        widget->timeline()->refreshColors();
        widget->update();
        if (reanalyze && widget->loadedCase())
            load(widget, {}, QString());
    }
}

bool MainWindow::exportReport(const QString& path)
{
    report::ReportOptions options;
    AnalyzedCasePtr loaded;
    std::shared_ptr<const Comparison> comparison; // kept alive while the report is written
    if (const CompareView* compare = qobject_cast<CompareView*>(currentTab())) {
        comparison = compare->comparison();
        loaded = compare->reportCase();
        options.comparison = comparison.get();
        if (!comparison || !loaded) {
            showBanner({ QStringLiteral("Nothing compared yet: pick two snapshots (or two step windows) first.") });
            return false;
        }
    } else if (const JobView* job = currentJob()) {
        loaded = job->failingCase();
        options.job = &job->summary();
        if (job->isBusy() || !loaded) {
            showBanner(
                { QStringLiteral("The job is not summarized yet (or no rank could be read): nothing to report.") });
            return false;
        }
    } else if (CaseWidget* current = currentCase(); current && current->loadedCase()) {
        loaded = current->loadedCase();
        // A plan only once the user gave a model: without one the What-if shows the measured run.
        if (const WhatIfView* whatIf = current->whatIf(); whatIf && whatIf->edited() && whatIf->hasModel())
            options.plan = &whatIf->result();
    }
    if (!loaded) {
        showBanner({ QStringLiteral("Open a case first: there is nothing to report yet.") });
        return false;
    }
    const WrittenReport written
        = writeReport(loaded->input, loaded->analysis, options, path.toStdString(), ReportStamp::None);
    if (!written.ok()) {
        showBanner({ QStringLiteral("Could not write the report to %1: %2").arg(path, toQString(written.error)) });
        return false;
    }
    statusBar()->showMessage(QStringLiteral("Report written to %1").arg(path), 8000);
    return true;
}

} // namespace oomlens
