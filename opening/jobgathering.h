#pragma once

// A job put together from what the person has: rank snapshots (summarized here by core/job's
// worker pool) and rank summaries written by `oomlens summarize` where the snapshots lie, mixed
// freely. opening/opening.h's openJob calls this for the CLI, the app's Job tab and the MCP
// server; none of them reads summaries itself.

#include "core/job/jobsummarizer.h"
#include "core/job/jobsummary.h"

#include <string>
#include <vector>

namespace oomlens {

// One rank file read into a case of its own, with its capture sidecar (where the rank may be
// written): core/job's RankLoader. Safe to call from several threads at once.
Case loadRankFile(const std::string& path);

struct GatheredJob
{
    JobSummary summary;
    // The failing rank's snapshot to open in full: a rank file given here, or the snapshot its
    // summary names where that is reachable (the recorded path, or the same name beside the
    // summary) and is the same file (size and hash). Empty when no rank failed or the snapshot is
    // not here: summary.failingSnapshotToCopy then names it and a job note says what to copy.
    std::string failingSnapshot;
};

// `files`: snapshots and summaries, told apart by content. A rank is its rank file: a summary and
// the snapshot it describes (the same bytes and the same rank by name, ranksummaryfile.h), or two
// summaries of one snapshot, count once (the summary is used: nothing to decode); a file named
// twice counts once. Any set of snapshots gives the same job as their summaries.
// A summary that cannot be read is a rank with its error, as an unreadable snapshot is.
// options.progress counts the snapshots decoded here; options.cancel stops them.
GatheredJob gatherJob(const std::vector<std::string>& files, const JobOptions& options = {});

} // namespace oomlens
