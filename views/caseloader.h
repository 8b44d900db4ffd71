#pragma once

#include "opening/loadedcase.h"
#include "opening/loadrequest.h"
#include "opening/opening.h"
#include "views/jobtracker.h"

#include <QList>
#include <QObject>
#include <QStringList>

#include <atomic>
#include <functional>
#include <memory>

namespace oomlens {

class TimelineData;

// A new case's timeline, handed over as soon as it is drawable (a big snapshot's first paint),
// while the diagnosis is still running. `partial` is the very case that finished() delivers
// later, still being completed by the loader: until then only its `input`, `title` and
// `analysis.snapshots` may be read (the loader is writing the diagnoses, headroom and links).
// `timeline` is built off the GUI thread, beside the diagnosis, for the first snapshot's
// primary device.
struct TimelineFirst
{
    LoadedCasePtr partial;
    std::shared_ptr<const TimelineData> timeline;
    int snapshotIndex = 0;
    int32_t device = 0;
};

struct LoadOutcome
{
    LoadedCasePtr loaded; // null when cancelled or when nothing could be read
    QStringList errors; // one line per bad input of this load
    bool cancelled = false;
};

// An input that could not be read as the app's banner shows it: "NAME: reason".
QString failureLine(const InputFailure& failure);

// Opens a case off the GUI thread: opening/opening.h's openCase as a JobTracker job, its progress,
// the timeline first and the outcome handed back as signals. Loads run side by side, each with its
// job id; the caller keeps the id of the load it still wants and ignores the rest (a superseded
// load's result is dropped). A cancelled load still says finished(), with `cancelled` set.
class CaseLoader : public QObject
{
    Q_OBJECT
public:
    explicit CaseLoader(QObject* parent = nullptr);
    ~CaseLoader() override;

    // `base` is the case the inputs are added to (a copy is extended); null starts a new case.
    // With no requests the base case is analyzed again (new settings: device, category rules).
    int start(LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title,
        const AnalysisOptions& options = {});
    void cancel(int jobId);
    void cancelAll();
    int runningCount() const { return m_jobs.runningCount(); }
    // Blocks until every running job has finished; for tests and shutdown.
    void waitForAll();

    // A new case whose snapshots hold at least this many trace events in all shows its timeline
    // first (timelineReady), then the rest (finished); smaller ones arrive whole, in about the
    // time a staged first paint would take. 0 stages every new case with a snapshot.
    void setTimelineFirstFrom(uint64_t events) { m_timelineFirstFrom = events; }
    static constexpr uint64_t defaultTimelineFirstFrom = OpenOptions::defaultTimelineFirstFrom;

    // The work itself, synchronous (openCase); runs in the worker and in tests. `timelineReady`,
    // when set, is called once the first stage of the analysis is done and the timeline's data is
    // built, for a new case with a snapshot of at least `timelineFirstFrom` trace events; it runs
    // on another thread than the caller's while the second stage (the diagnosis) runs, and always
    // before this returns (OpenOptions::timelineFirst).
    static LoadOutcome load(LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title,
        const std::atomic_bool& cancel, const std::function<void(int, const QString&)>& progress,
        const AnalysisOptions& options = {}, const std::function<void(const TimelineFirst&)>& timelineReady = {},
        uint64_t timelineFirstFrom = defaultTimelineFirstFrom);

signals:
    void progressChanged(int jobId, int permille, const QString& text);
    // Emitted at most once per job, before finished() and only when that job was not cancelled.
    void timelineReady(int jobId, const oomlens::TimelineFirst& first);
    void finished(int jobId, const oomlens::LoadOutcome& outcome);

private:
    uint64_t m_timelineFirstFrom = defaultTimelineFirstFrom;
    JobTracker m_jobs;
};

} // namespace oomlens
