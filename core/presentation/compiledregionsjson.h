#pragma once

#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// `diagnose --json`'s "compiled_regions": per snapshot, the torch.compile regions its primary
// device's allocations ran in (core/analysis/compileattribution.h), each with the model
// lines that allocated most; an empty list for an eager run, null without a primary device.
nlohmann::ordered_json compiledRegionsToJson(const CaseAnalysis& analysis);

} // namespace oomlens
