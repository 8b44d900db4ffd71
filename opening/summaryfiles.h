#pragma once

// The files of `oomlens summarize`: which snapshots it reads (a folder stands for the snapshots in
// it), the summary file each one gets, and writing it. Reading summaries back is
// opening/jobgathering.h's.

#include "core/job/ranksummaryfile.h"
#include "opening/inputfailure.h"

#include <string>
#include <vector>

namespace oomlens {

struct RankToSummarize
{
    std::string snapshot; // absolute: on the desktop, "copy /scratch/job/logs/rank6.pickle" says where
    std::string summaryName; // NAME.oomlens-summary.json, unique over the whole list
};

struct SummaryInputs
{
    // Sorted and without repeats: every shard (--shard I/N) must see the same list.
    std::vector<RankToSummarize> ranks;
    std::vector<InputFailure> failures; // a folder without snapshot files
};

// Folders stand for the snapshots in them; files are taken as given (one that is not a snapshot
// is a rank with its error). A name that several snapshots share (logs/rank_3/snapshot.pickle,
// logs/rank_4/snapshot.pickle) takes its folders' names in front until it is unique
// (rank_3-snapshot), so that shards never write over each other.
SummaryInputs summaryInputs(const std::vector<std::string>& paths);

// `summary` written as `name` into `folder`, with the identity of the snapshot it describes (its
// size and hash, read now: the page cache still holds a file just decoded). A shard killed
// mid-write leaves the old summary or none, never half of one. Returns the path it was written
// to; `error` says why not.
std::string writeRankSummary(
    const std::string& folder, const std::string& name, SummarizedRank summary, std::string& error);

} // namespace oomlens
