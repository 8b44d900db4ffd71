#include "views/caseloader.h"

#include "views/plots/timelinedata.h"
#include "views/viewutil.h"

#include <QFileInfo>

#include <exception>

namespace oomlens {

QString failureLine(const InputFailure& failure)
{
    const QString shown = failure.path == "(pasted)" ? QStringLiteral("pasted text")
                                                     : QFileInfo(QString::fromStdString(failure.path)).fileName();
    return shown + QStringLiteral(": ") + QString::fromStdString(failure.reason);
}

CaseLoader::CaseLoader(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<oomlens::LoadOutcome>();
    qRegisterMetaType<oomlens::TimelineFirst>();
    connect(&m_jobs, &JobTracker::progressChanged, this,
        [this](int jobId, int permille, int, const QString& text) { emit progressChanged(jobId, permille, text); });
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
        openOptions.timelineFirst = [&timelineReady](const LoadedCasePtr& partial) {
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
        outcome.errors << failureLine(failure);
    if (opened.anyReadable())
        outcome.loaded = std::move(opened.loaded);
    return outcome;
}

int CaseLoader::start(
    LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title, const AnalysisOptions& options)
{
    // `this` is only used in what the job posts back, which runs only while m_jobs, and so this
    // loader, exists.
    auto work = [this, base, requests, title, options, from = m_timelineFirstFrom](const JobContext& job) {
        const auto progress = [&job](int permille, const QString& text) { job.progress(permille, 1000, text); };
        // The first stage is handed over while the load is still wanted and not cancelled.
        const auto timelineFirst = [this, &job](const TimelineFirst& first) {
            job.post([this, job, first] {
                if (!job.cancelled())
                    emit timelineReady(job.id(), first);
            });
        };
        return load(base, requests, title, job.cancelFlag(), progress, options, timelineFirst, from);
    };
    return m_jobs.start(std::move(work), [this](LoadOutcome outcome, const JobEnd& end) {
        outcome.cancelled = outcome.cancelled || end.cancelled;
        emit finished(end.id, outcome);
    });
}

void CaseLoader::cancel(int jobId)
{
    m_jobs.cancel(jobId);
}

void CaseLoader::cancelAll()
{
    m_jobs.cancelAll();
}

void CaseLoader::waitForAll()
{
    m_jobs.waitForAll();
}

} // namespace oomlens
