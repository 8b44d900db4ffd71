#include "views/caseloader.h"

#include "parsers/inputloader.h"
#include "views/timelinedata.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QPointer>
#include <QPromise>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <future>

namespace oomlens {

struct CaseLoader::Job
{
    // Shared with the worker, which may outlive the job's bookkeeping here.
    std::shared_ptr<std::atomic_bool> cancel = std::make_shared<std::atomic_bool>(false);
    QFutureWatcher<LoadOutcome>* watcher = nullptr;
};

CaseLoader::CaseLoader(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<oomlens::LoadOutcome>();
    qRegisterMetaType<oomlens::TimelineFirst>();
}

CaseLoader::~CaseLoader()
{
    cancelAll();
    waitForAll();
}

LoadOutcome CaseLoader::load(LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title,
    const std::atomic_bool& cancel, const std::function<void(int, const QString&)>& progress,
    const AnalysisOptions& options, const std::function<void(const TimelineFirst&)>& timelineReady,
    uint64_t timelineFirstFrom)
{
    LoadOutcome outcome;
    auto loaded = std::make_shared<LoadedCase>();
    if (base)
        loaded->input = base->input;
    loaded->title = base ? base->title : title;
    const size_t firstNewInput = loaded->input.inputs.size();

    // Progress is in bytes across all inputs; reading dominates, analysis gets the last 10%.
    uint64_t totalBytes = 0;
    for (const LoadRequest& request : requests)
        totalBytes += request.path.isEmpty() ? uint64_t(request.text.size()) : uint64_t(QFileInfo(request.path).size());
    totalBytes = std::max<uint64_t>(totalBytes, 1);
    uint64_t doneBefore = 0;
    int lastPermille = -1;
    auto report = [&](uint64_t done, const QString& text) {
        const int permille = int(900.0 * double(std::min(done, totalBytes)) / double(totalBytes));
        if (permille != lastPermille && progress) {
            lastPermille = permille;
            progress(permille, text);
        }
    };

    try {
        for (const LoadRequest& request : requests) {
            if (cancel) {
                outcome.cancelled = true;
                return outcome;
            }
            const QString name
                = request.path.isEmpty() ? QStringLiteral("pasted text") : QFileInfo(request.path).fileName();
            const QString text = QStringLiteral("Reading %1…").arg(name);
            report(doneBefore, text);
            SnapshotReadOptions readOptions;
            readOptions.cancel = &cancel;
            readOptions.progress = [&](uint64_t done, uint64_t) { report(doneBefore + done, text); };
            if (request.path.isEmpty()) {
                addInput(loaded->input, "(pasted)",
                    std::string_view(request.text.constData(), size_t(request.text.size())), readOptions);
                doneBefore += uint64_t(request.text.size());
            } else {
                addFile(loaded->input, request.path.toStdString(), readOptions);
                doneBefore += uint64_t(QFileInfo(request.path).size());
            }
        }
        if (cancel) {
            outcome.cancelled = true;
            return outcome;
        }
        if (progress)
            progress(900, QStringLiteral("Analyzing…"));
        loaded->analysis.snapshots = analyzeSnapshots(loaded->input, options);
        if (cancel) {
            outcome.cancelled = true;
            return outcome;
        }
        uint64_t events = 0;
        for (const auto& snapshot : loaded->input.snapshots)
            events += snapshot ? snapshot->totalTraceEvents() : 0;
        const bool staged
            = timelineReady && !base && !loaded->analysis.snapshots.empty() && events >= timelineFirstFrom;
        if (staged) {
            // The view's series are built off the GUI thread, on a thread of their own while this
            // one diagnoses: both only read the snapshots' analysis (the diagnosis writes the
            // case's other members), and on a big trace either takes a few hundred milliseconds
            // that the second core would otherwise spend idle. The timeline aliases the case.
            auto timeline = std::async(std::launch::async, [&loaded, &timelineReady] {
                TimelineFirst first;
                first.partial = loaded;
                first.snapshotIndex = 0;
                first.device = loaded->analysis.snapshots.front().primaryDevice;
                first.timeline = std::make_shared<const TimelineData>(
                    std::shared_ptr<const SnapshotAnalysis>(loaded, &loaded->analysis.snapshots.front()), first.device);
                timelineReady(first);
            });
            if (progress)
                progress(950, QStringLiteral("Diagnosing…"));
            diagnoseCase(loaded->input, loaded->analysis);
            timeline.get(); // its exception, if any, is this load's
        } else {
            diagnoseCase(loaded->input, loaded->analysis);
        }
    } catch (const std::exception& error) {
        outcome.errors << QStringLiteral("internal error while loading: %1").arg(QString::fromUtf8(error.what()));
        return outcome;
    }

    bool anyReadable = false;
    for (size_t i = 0; i < loaded->input.inputs.size(); ++i) {
        const CaseInput& input = loaded->input.inputs[i];
        anyReadable = anyReadable || !input.error;
        if (i >= firstNewInput && input.error) {
            const QString shown = input.path == "(pasted)" ? QStringLiteral("pasted text")
                                                           : QFileInfo(QString::fromStdString(input.path)).fileName();
            outcome.errors << shown + QStringLiteral(": ") + QString::fromStdString(*input.error);
        }
    }
    if (anyReadable)
        outcome.loaded = std::move(loaded);
    if (progress)
        progress(1000, QStringLiteral("Done"));
    return outcome;
}

int CaseLoader::start(
    LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title, const AnalysisOptions& options)
{
    const int id = m_nextId++;
    auto job = std::make_shared<Job>();
    job->watcher = new QFutureWatcher<LoadOutcome>(this);
    m_jobs.insert(id, job);

    auto* watcher = job->watcher;
    connect(watcher, &QFutureWatcherBase::progressValueChanged, this,
        [this, id, watcher](int value) { emit progressChanged(id, value, watcher->progressText()); });
    connect(watcher, &QFutureWatcherBase::finished, this, [this, id, watcher] {
        const std::shared_ptr<Job> finishedJob = m_jobs.take(id);
        LoadOutcome outcome;
        if (watcher->future().resultCount() > 0)
            outcome = watcher->result();
        outcome.cancelled = outcome.cancelled || (finishedJob && *finishedJob->cancel);
        watcher->deleteLater();
        emit finished(id, outcome);
    });

    // The first stage is handed over on the GUI thread, and only while the job is still wanted.
    QPointer<CaseLoader> self(this);
    auto timelineReady = [self, id](const TimelineFirst& first) {
        QMetaObject::invokeMethod(
            self,
            [self, id, first] {
                const auto job = self ? self->m_jobs.value(id) : nullptr;
                if (job && !*job->cancel)
                    emit self->timelineReady(id, first);
            },
            Qt::QueuedConnection);
    };
    QFuture<LoadOutcome> future
        = QtConcurrent::run([base, requests, title, options, timelineReady, from = m_timelineFirstFrom,
                                cancel = job->cancel](QPromise<LoadOutcome>& promise) {
              promise.setProgressRange(0, 1000);
              promise.addResult(load(
                  base, requests, title, *cancel,
                  [&promise](int permille, const QString& text) { promise.setProgressValueAndText(permille, text); },
                  options, timelineReady, from));
          });
    watcher->setFuture(future);
    return id;
}

void CaseLoader::cancel(int jobId)
{
    if (auto job = m_jobs.value(jobId))
        *job->cancel = true;
}

void CaseLoader::cancelAll()
{
    for (const auto& job : std::as_const(m_jobs))
        *job->cancel = true;
}

void CaseLoader::waitForAll()
{
    for (const auto& job : m_jobs.values())
        job->watcher->waitForFinished();
}

} // namespace oomlens
