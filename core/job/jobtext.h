#pragma once

#include "core/job/jobsummary.h"

#include <string>

namespace oomlens {

// The job summary as `oomlens diagnose` prints it before the failing rank's diagnosis: the ranks
// in a table, the failing rank and why it was picked, the imbalance, the groups and the notes.
std::string jobToText(const JobSummary& job);

// One line naming the failing rank and why it is the one ("rank 6 (rank6.pickle): the first
// rank to hit an OOM"); the report and the CLI heading share it.
std::string failingRankSentence(const JobSummary& job);

// The line between the job summary and the failing rank's diagnosis in the text output.
std::string failingRankHeading(const JobSummary& job);

// "only_oom", "first_oom", "oom_order_unknown", "closest_to_capacity", "highest_peak", "none".
std::string_view failingReasonName(FailingRankReason reason);

} // namespace oomlens
