#include "views/caseloader.h"

#include "views/plots/timelinedata.h"
#include "views/viewutil.h"

#include <QFutureWatcher>
#include <QPointer>
#include <QPromise>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

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

LoadOutcome CaseLoader::load(AnalyzedCasePtr base, const QList<LoadRequest>& requests, const QString& title,
    const std::atomic_bool& cancel, const std::function<void(int, const QString&)>& progress,
    const AnalysisOptions& options, const std::function<void(const TimelineFirst&)>& timelineReady,
    uint64_t timelineFirstFrom)
{
    OpenOptions openOptions;
    openOptions.analysis = options;
    openOptions.cancel = &cancel;
    if (progress)
        openOptions.progress
            = [&progress](int permille, const std::string& text) { progress(permille, toQString(text)); };
    openOptions.timelineFirstFrom = timelineFirstFrom;
    if (timelineReady) {
        // The view's series are built on the opening's own first-stage thread, beside the
        // diagnosis. The timeline aliases the case.
        openOptions.timelineFirst = [&timelineReady](const AnalyzedCasePtr& partial) {
            TimelineFirst first;
            first.partial = partial;
            first.snapshotIndex = 0;
            first.device = partial->analysis.snapshots.front().primaryDevice;
            first.timeline = std::make_shared<const TimelineData>(
                std::shared_ptr<const SnapshotAnalysis>(partial, &partial->analysis.snapshots.front()), first.device);
            timelineReady(first);
        };
    }

    LoadOutcome outcome;
    Opened opened;
    try {
        opened = openCase(
            base, std::vector<LoadRequest>(requests.begin(), requests.end()), title.toStdString(), openOptions);
    } catch (const std::exception& error) {
        outcome.errors << QStringLiteral("internal error while loading: %1").arg(QString::fromUtf8(error.what()));
        return outcome;
    }
    if (opened.cancelled) {
        outcome.cancelled = true;
        return outcome;
    }
    for (const InputFailure& failure : opened.failures)
        outcome.errors << toQString(failureLine(failure, FailureReader::Banner));
    if (opened.anyReadable())
        outcome.loaded = std::move(opened.loaded);
    return outcome;
}

int CaseLoader::start(
    AnalyzedCasePtr base, const QList<LoadRequest>& requests, const QString& title, const AnalysisOptions& options)
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
