#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"
#include "core/job/jobsummary.h"

#include <string>

namespace oomlens {

// Reduces one rank file's case (its snapshot and capture sidecar, nothing else) and that case's
// analysis to the rank's summary. The summary keeps no reference into either, so the caller can
// drop the decoded snapshot right after.
RankSummary summarizeRank(const std::string& file, const Case& rankCase, const CaseAnalysis& analysis);

// The summary of a file that could not be read: its name, its rank from the name, and why.
RankSummary unreadableRank(const std::string& file, std::string error);

} // namespace oomlens
