#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/job/jobsummary.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace oomlens {

// Reads one rank file into a case of its own (the snapshot and its capture sidecar). core/ reads
// no files: the CLI and the app pass parsers/inputloader.h's addFile (opening/jobgathering.h has
// one ready, loadRankFile), tests pass a builder. Called from several threads at once.
using RankLoader = std::function<Case(const std::string& file)>;

struct JobOptions
{
    AnalysisOptions analysis; // applied to every rank (--device, --rules)
    size_t maxWorkers = 0; // 0: one per core
    // Called from the worker threads after each rank, with ranks done so far and the total.
    std::function<void(size_t done, size_t total)> progress;
    const std::atomic_bool* cancel = nullptr; // ranks not started when it is set are left unread
    // Called from the worker thread that made it with each rank's summary and the file's index,
    // before the worker takes the next file: `oomlens summarize` writes the rank's file there.
    std::function<void(size_t index, const RankSummary& rank)> rankDone;
};

// The decoding threads a job of `files` files gets: min(cores, files), at least one.
size_t jobWorkerCount(size_t files, size_t maxWorkers = 0);

// The pool alone: every file's RankSummary, in the order of `files`, not yet put together as a
// job (summaries read from `oomlens summarize` files join them before assembleJob()). Uses
// jobWorkerCount(files.size(), options.maxWorkers) threads.
std::vector<RankSummary> summarizeRankFiles(
    const std::vector<std::string>& files, const RankLoader& load, const JobOptions& options = {});

// Summarizes every rank file of one job. A pool of jobWorkerCount() threads takes the files one
// at a time: load → analyze → reduce to a RankSummary → drop the case, so at most `workers`
// decoded snapshots are alive at once however many files there are. A file that cannot be read
// becomes a rank with its error; the others are still summarized. The failing rank is then the
// caller's to open again in full (with any text inputs) for its diagnosis.
JobSummary summarizeJob(const std::vector<std::string>& files, const RankLoader& load, const JobOptions& options = {});

} // namespace oomlens
