#include "views/mainwindow.h"

#include "core/report/htmlreport.h"
#include "views/allocatorstatewidget.h"
#include "views/casewidget.h"
#include "views/compareview.h"
#include "views/emptystatewidget.h"
#include "views/jobview.h"
#include "views/snapshotfiles.h"
#include "views/timelinewidget.h"
#include "views/whatifview.h"

#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDeadlineTimer>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

namespace oomlens {

QString MainWindow::titleFor(const QList<LoadRequest>& requests)
{
    if (requests.isEmpty())
        return QStringLiteral("Case");
    const QString first
        = requests.front().path.isEmpty() ? QStringLiteral("Pasted text") : QFileInfo(requests.front().path).fileName();
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

    m_banner = new QWidget(central);
    m_banner->setObjectName(QStringLiteral("errorBanner"));
    m_banner->setStyleSheet(QStringLiteral("QWidget#errorBanner { background: rgba(198, 40, 40, 38); "
                                           "border-bottom: 1px solid rgba(198, 40, 40, 140); }"));
    auto* bannerLayout = new QHBoxLayout(m_banner);
    bannerLayout->setContentsMargins(12, 6, 6, 6);
    m_bannerText = new QLabel(m_banner);
    m_bannerText->setWordWrap(true);
    m_bannerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bannerLayout->addWidget(m_bannerText, 1);
    auto* closeBanner = new QToolButton(m_banner);
    closeBanner->setText(QStringLiteral("✕"));
    closeBanner->setAutoRaise(true);
    closeBanner->setToolTip(QStringLiteral("Dismiss"));
    bannerLayout->addWidget(closeBanner, 0, Qt::AlignTop);
    connect(closeBanner, &QToolButton::clicked, this, &MainWindow::hideBanner);
    m_banner->hide();
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

    createActions();
    m_empty->setRecentFiles(recentFiles());
    updateState();
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
    if (const QStringList ranks = jobRankFiles(absolute); !ranks.isEmpty()) {
        openJob(ranks);
        return;
    }
    QList<LoadRequest> requests;
    for (const QString& path : absolute)
        requests << LoadRequest::file(path);
    load(nullptr, requests, titleFor(requests));
}

JobView* MainWindow::openJob(const QStringList& rankFiles)
{
    if (rankFiles.isEmpty())
        return nullptr;
    addRecent(rankFiles);
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
        for (const RankSummary& rank : job->summary().ranks) {
            if (!rank.readable())
                unreadable << QStringLiteral("%1: %2").arg(
                    QFileInfo(QString::fromStdString(rank.file)).fileName(), QString::fromStdString(rank.error));
        }
        if (!unreadable.isEmpty())
            showBanner(unreadable);
        statusBar()->showMessage(job->headline(), 10000);
    });
    job->start(rankFiles, m_settings.analysisOptions());
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
        const LoadedCasePtr loaded = widget->loadedCase();
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
        if (!request.path.isEmpty())
            files << request.path;
    }
    addRecent(files);
    // A case still being diagnosed takes more inputs from its inputs as read so far.
    const LoadedCasePtr base = !target ? nullptr
        : target->loadedCase()         ? target->loadedCase()
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
    load(target, { LoadRequest::pasted(text.toUtf8()) }, target ? QString() : nextPasteTitle());
}

QString MainWindow::nextPasteTitle()
{
    ++m_pasteCount;
    return m_pasteCount == 1 ? QStringLiteral("Pasted text") : QStringLiteral("Pasted text %1").arg(m_pasteCount);
}

void MainWindow::onProgress(int jobId, int permille, const QString& text)
{
    if (jobId != m_latestJob)
        return;
    m_progress->setValue(permille);
    if (!text.isEmpty())
        m_progressText->setText(text);
}

void MainWindow::onTimelineReady(int jobId, const TimelineFirst& first)
{
    // Only a new case opens early: a case on screen keeps showing its last whole analysis.
    const auto it = m_pending.find(jobId);
    if (it == m_pending.end() || it->target || !it->newCase)
        return;
    auto* widget = new CaseWidget(m_cases);
    widget->timeline()->setPreferredAxis(
        m_settings.eventAxis ? TimelineWidget::Axis::Events : TimelineWidget::Axis::Time);
    widget->showTimelineFirst(first);
    const int index = m_cases->addTab(widget, first.partial->title);
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
            hideBanner();
        if (outcome.loaded) {
            CaseWidget* widget = pending.target;
            if (!widget && !pending.newCase) {
                // The case was closed while loading: nothing to update.
            } else if (!widget) {
                widget = new CaseWidget(m_cases);
                widget->timeline()->setPreferredAxis(
                    m_settings.eventAxis ? TimelineWidget::Axis::Events : TimelineWidget::Axis::Time);
                widget->setCase(outcome.loaded);
                const int index = m_cases->addTab(widget, outcome.loaded->title);
                m_cases->setCurrentIndex(index);
            } else {
                widget->setCase(outcome.loaded);
                m_cases->setTabText(m_cases->indexOf(widget), outcome.loaded->title);
            }
            if (widget) {
                const qsizetype inputs = qsizetype(outcome.loaded->input.inputs.size());
                statusBar()->showMessage(QStringLiteral("%1: %2 input(s), %3 diagnosis(es)")
                                             .arg(outcome.loaded->title)
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
    m_bannerText->setText(lines.join(QLatin1Char('\n')));
    m_banner->show();
    statusBar()->showMessage(lines.value(0), 10000);
}

void MainWindow::hideBanner()
{
    m_banner->hide();
    m_bannerText->clear();
}

QString MainWindow::bannerText() const
{
    return m_banner->isVisible() || !m_bannerText->text().isEmpty() ? m_bannerText->text() : QString();
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
            requests << LoadRequest::file(url.toLocalFile());
        else
            skipped << url.toString();
    }
    if (requests.isEmpty() && skipped.isEmpty() && mime->hasText())
        requests << LoadRequest::pasted(mime->text().toUtf8());
    if (!skipped.isEmpty())
        showBanner({ QStringLiteral("Only local files can be opened; download first: %1")
                         .arg(skipped.join(QStringLiteral(", "))) });
    if (requests.isEmpty())
        return;
    event->acceptProposedAction();
    // Several snapshots dropped together are the ranks of one job (hold Shift to add them to the
    // current case as before).
    if (!(event->modifiers() & Qt::ShiftModifier)) {
        QStringList files;
        for (const LoadRequest& request : std::as_const(requests))
            files << request.path;
        if (const QStringList ranks = jobRankFiles(files); !ranks.isEmpty()) {
            openJob(ranks);
            statusBar()->showMessage(QStringLiteral("%1 snapshot files dropped together: opened as one job (hold "
                                                    "Shift while dropping to add them to the current case)")
                                         .arg(ranks.size()),
                10000);
            return;
        }
    }
    // Dropping on an open case adds to it; hold Ctrl to open a separate case.
    CaseWidget* target = (event->modifiers() & Qt::ControlModifier) ? nullptr : currentCase();
    const QString title = requests.front().path.isEmpty() && !target ? nextPasteTitle() : titleFor(requests);
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
    QDir().mkpath(directory);
    QStringList written;
    auto grab = [&](const QString& name) {
        QApplication::processEvents();
        const QString path = QDir(directory).filePath(name);
        if (this->grab().save(path))
            written << path;
    };
    if (auto* job = currentJob()) {
        waitWhileBusy(job);
        grab(QStringLiteral("job.png"));
        return written;
    }
    if (CompareView* compare = qobject_cast<CompareView*>(currentTab())) {
        waitWhileBusy(compare);
        grab(QStringLiteral("compare.png"));
        return written;
    }
    CaseWidget* current = currentCase();
    if (!current) {
        grab(QStringLiteral("empty.png"));
        return written;
    }
    current->showPage(CaseWidget::OverviewTab);
    grab(QStringLiteral("overview.png"));
    if (current->tabs()->isTabEnabled(CaseWidget::TimelineTab)) {
        current->showPage(CaseWidget::TimelineTab);
        current->timeline()->resetZoom();
        grab(QStringLiteral("timeline.png"));
        current->detailTabs()->setCurrentIndex(1);
        // The allocator state is built on the thread pool; picture it once it is on screen.
        QDeadlineTimer deadline(10000);
        while (current->allocatorState()->isBusy() && !deadline.hasExpired()) {
            QThread::msleep(5);
            QApplication::processEvents();
        }
        grab(QStringLiteral("allocator.png"));
        current->detailTabs()->setCurrentIndex(0);
        current->showPage(CaseWidget::EventsTab);
        grab(QStringLiteral("events.png"));
        current->showPage(CaseWidget::TimelineTab);
        if (current->timeline()->exportImage(QDir(directory).filePath(QStringLiteral("timeline-chart.svg"))))
            written << QDir(directory).filePath(QStringLiteral("timeline-chart.svg"));
    }
    return written;
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

void MainWindow::waitWhileBusy(QWidget* tab)
{
    // Both views compute on the thread pool; picture them once their result is on screen.
    const auto busy = [tab] {
        if (auto* job = qobject_cast<JobView*>(tab))
            return job->isBusy();
        if (auto* compare = qobject_cast<CompareView*>(tab))
            return compare->isBusy();
        return false;
    };
    QDeadlineTimer deadline(120000);
    while (busy() && !deadline.hasExpired()) {
        QThread::msleep(5);
        QApplication::processEvents();
    }
}

bool MainWindow::exportReport(const QString& path)
{
    report::ReportOptions options;
    LoadedCasePtr loaded;
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
        if (const WhatIfView* whatIf = current->whatIf(); whatIf && whatIf->edited())
            options.plan = &whatIf->result();
    }
    if (!loaded) {
        showBanner({ QStringLiteral("Open a case first: there is nothing to report yet.") });
        return false;
    }
    const std::string html = report::buildHtmlReport(loaded->input, loaded->analysis, options);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(html.data(), qint64(html.size())) != qint64(html.size())
        || !file.commit()) {
        showBanner({ QStringLiteral("Could not write the report to %1: %2").arg(path, file.errorString()) });
        return false;
    }
    statusBar()->showMessage(QStringLiteral("Report written to %1").arg(path), 8000);
    return true;
}

} // namespace oomlens
