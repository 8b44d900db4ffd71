#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// diagnose --json's "profiler_timelines": per file and device the format, device, events, the
// peak (bytes, time), categories_at_peak in oomlens's names and pytorch_categories_at_peak in
// PyTorch's own, and, where a snapshot is open too, the two categorisations side by side.
nlohmann::ordered_json profilerTimelinesToJson(const Case& input, const CaseAnalysis& analysis);

} // namespace oomlens
