#pragma once

#include "core/job/jobsummary.h"

#include <string>
#include <vector>

namespace oomlens {

// What the rank summaries say together: orders them by rank, names the failing rank, measures the
// imbalance, groups the ranks that look alike and writes the notes. summarizeJob() calls it once
// the pool is done; tests call it on hand-made summaries.
JobSummary assembleJob(std::vector<RankSummary> ranks);

// The groups of ranks that look alike (jobgrouping.cpp); sets each rank's `group`.
std::vector<RankGroup> groupRanks(std::vector<RankSummary>& ranks);

// Job-level observations (jobnotes.cpp): several OOMs, uneven peaks, a rank holding far more of
// one kind of state, uneven pipeline stages, missing or repeated rank numbers.
std::vector<std::string> jobNotes(const JobSummary& job);

// "rank 3", or the file's name when the rank is not known.
std::string rankName(const RankSummary& rank);
// "ranks 0–3, 5" for the given indices into `ranks`.
std::string rankListLabel(const std::vector<RankSummary>& ranks, const std::vector<size_t>& members);

} // namespace oomlens
