#pragma once

#include "core/job/jobsummary.h"
#include "views/loadedcase.h"

#include <QStringList>

#include <atomic>
#include <functional>

namespace oomlens {

// A job as the Job view holds it: every rank summarized by core's worker pool (no rank's decoded
// snapshot kept), and the failing rank's file read again in full so that the report has the
// diagnosis of the rank that failed.
struct LoadedJob
{
    JobSummary summary;
    LoadedCasePtr failingCase; // null when no rank could be read, or when cancelled
    bool cancelled = false;
};

// Synchronous; the Job view runs it on the thread pool. `progress` gets ranks done and the total
// (from the summarizer's worker threads), `cancel` stops ranks not yet started.
LoadedJob loadJob(const QStringList& files, const AnalysisOptions& options, const std::atomic_bool& cancel,
    const std::function<void(size_t done, size_t total)>& progress);

} // namespace oomlens
