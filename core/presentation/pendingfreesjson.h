#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// `diagnose --json`'s "pending_frees": one entry per snapshot (null without a primary device):
// memory freed by the program that the allocator could not yet reuse (core/analysis/pendingfrees.h),
// at its most, at the peak and at the OOM, the segments reserved meanwhile, the dump's
// active_pending_free blocks and the frames that released the most.
nlohmann::ordered_json pendingFreesToJson(const CaseAnalysis& analysis);

} // namespace oomlens
