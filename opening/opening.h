#pragma once

// The one way in: files and pasted text turned into an analyzed case, or into a job of many ranks
// with its failing rank's case, for the CLI, the app and the MCP server alike. Which files make a
// job is opening/jobfiles.h's one rule; what a named input stands for, opening/inputrequests.h's;
// how a failure is worded, opening/inputfailure.h's. The front ends keep only their wrappers: the
// app its worker threads and signals (views/caseloader.h, the Job view), the CLI its stderr lines
// (app/cli/inputs.h), the MCP server its cache (app/mcp/casecache.h).

#include "core/job/jobsummary.h"
#include "opening/analyzedcase.h"
#include "opening/inputfailure.h"
#include "opening/loadrequest.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

struct OpenOptions
{
    AnalysisOptions analysis; // --device, --rules; applied to every rank of a job too
    const std::atomic_bool* cancel = nullptr; // checked between inputs and stages, and by the decoder
    // A case: permille done (reading the inputs' bytes is 0–900, the analysis the rest) and what
    // is being done ("Reading rank0.pickle…"); on the opening thread, each value once.
    std::function<void(int permille, const std::string& text)> progress;
    // A job: ranks summarized so far and their total, from the summarizer's worker threads.
    std::function<void(size_t done, size_t total)> rankProgress;
    // The timeline first: for a new case whose snapshots hold at least `timelineFirstFrom` trace
    // events in all, called once the first stage of the analysis (core/caseanalysis.h) is done,
    // on a thread of its own while the diagnosis runs, and always before openCase returns.
    // `partial` is the very case openCase then returns, still being completed: until then only
    // its `input`, `title` and `analysis.snapshots` may be read. Not used for a job's case.
    std::function<void(const AnalyzedCasePtr& partial)> timelineFirst;
    uint64_t timelineFirstFrom = defaultTimelineFirstFrom;
    // Smaller cases arrive whole in about the time a staged first paint would take.
    static constexpr uint64_t defaultTimelineFirstFrom = 1'000'000;
};

struct Opened
{
    // The case; for a job, the failing rank's snapshot opened in full together with the inputs
    // given beside the ranks (empty of snapshots when the failing rank came from a summary whose
    // snapshot is not here: job->failingSnapshotToCopy names it). Null only when cancelled.
    std::shared_ptr<AnalyzedCase> loaded;
    std::optional<JobSummary> job; // set when the inputs were a job
    // A job: where the failing rank's snapshot was opened from (for a rank read from a summary,
    // the snapshot found beside it may lie elsewhere than the path in its summary).
    std::string failingSnapshot;
    std::vector<InputFailure> failures; // in the order read; a job's unreadable ranks first
    bool cancelled = false;

    int failedInputs() const; // the failures but the warnings
    bool anyReadable() const; // whether any input of the case was read (a base case's included)
};

// Why `snapshot` cannot be described for `device`: "the snapshot has no device 7; it holds
// devices 0 and 1". A device asked for that a snapshot lacks makes that input fail.
std::string noSuchDeviceReason(const Snapshot& snapshot, int32_t device);

// Reads `requests` into `into` without analyzing them; the failures of these requests. Stops
// before the next request once options.cancel is set.
std::vector<InputFailure> readInputs(
    Case& into, const std::vector<LoadRequest>& requests, const OpenOptions& options = {});

// One input that must be a snapshot (`compare`, `plan --snapshot`), read and analyzed for
// `options.device`. Without an analysis the failures say why: it could not be read, it is not a
// snapshot, or it lacks the device asked for.
struct OpenedSnapshot
{
    Case input;
    std::optional<SnapshotAnalysis> analysis;
    std::vector<InputFailure> failures; // in the order found, warnings (a broken sidecar) included
};
OpenedSnapshot openSnapshot(const LoadRequest& request, const AnalysisOptions& options);

// One case: `base`'s inputs (null: a new case titled `title`) and `requests` read, then analyzed;
// no job rule applied. The failures are those of `requests` only.
Opened openCase(const AnalyzedCasePtr& base, const std::vector<LoadRequest>& requests, const std::string& title,
    const OpenOptions& options = {});

// A job of `rankFiles` (snapshots and rank summaries, mixed: opening/jobgathering.h), then the
// failing rank's snapshot opened in full with `beside`, the inputs given beside the ranks (a
// launcher's log, a traceback), which belong to the rank that failed.
Opened openJob(
    const std::vector<std::string>& rankFiles, const std::vector<LoadRequest>& beside, const OpenOptions& options = {});

// Whether requests are a job or one case: the rank files jobRankFiles() finds among their files,
// and the other requests beside them, which join the failing rank's case. No rank files: the
// requests are one case. The app decides with it which tab to open; openInputs opens either.
struct JobInputs
{
    std::vector<std::string> rankFiles; // empty: the requests are one case
    std::vector<LoadRequest> beside;
    bool isJob() const { return !rankFiles.empty(); }
};
JobInputs jobInputsAmong(const std::vector<LoadRequest>& requests);

// The requests as the user means them (jobInputsAmong): a job, or one case.
Opened openInputs(const std::vector<LoadRequest>& requests, const OpenOptions& options = {});

} // namespace oomlens
