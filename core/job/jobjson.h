#pragma once

#include "core/job/jobsummary.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// The "job" object of `diagnose --json` (product.md §5): ranks (rank, file, peak_allocated_bytes,
// oom, then added keys), imbalance, failing_rank (the rank's number, null when none or unknown),
// then added keys (failing_file, failing_reason, groups, notes). Keys are added, never renamed.
nlohmann::ordered_json jobToJson(const JobSummary& job);

// Adds "job" to a `diagnose --json` document of the failing rank's case, and lists the other rank
// files under "inputs" (kind "snapshot", or "rank_summary" for an `oomlens summarize` file; their
// error or null) so that every input given is there.
void addJobToJson(nlohmann::ordered_json& document, const JobSummary& job);

} // namespace oomlens
