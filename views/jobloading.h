#pragma once

#include "core/job/jobsummary.h"
#include "views/loadedcase.h"

#include <QStringList>

#include <atomic>
#include <functional>
#include <string>

namespace oomlens {

// A job as the Job view holds it: every rank snapshot summarized by core's worker pool (no rank's
// decoded snapshot kept) and every rank summary read (parsers/jobgathering.h), and the failing
// rank's snapshot read in full so that the report has the diagnosis of the rank that failed.
struct LoadedJob
{
    JobSummary summary;
    // Null when no rank could be read or when cancelled. When the failing rank came from a summary
    // whose snapshot is not here (summary.failingSnapshotToCopy names it), an empty case.
    LoadedCasePtr failingCase;
    // Where the failing rank's snapshot was opened from (for a rank read from a summary, the
    // snapshot found beside it may lie elsewhere than the path in its summary).
    std::string failingSnapshot;
    bool cancelled = false;
};

// Synchronous; the Job view runs it on the thread pool. `progress` gets ranks done and the total
// (from the summarizer's worker threads), `cancel` stops ranks not yet started.
LoadedJob loadJob(const QStringList& files, const AnalysisOptions& options, const std::atomic_bool& cancel,
    const std::function<void(size_t done, size_t total)>& progress);

} // namespace oomlens
