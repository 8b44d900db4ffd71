#pragma once

#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// The `serving` object of `diagnose --json` (docs/serving.md): null when the case shows no
// inference run.
nlohmann::ordered_json servingToJson(const CaseAnalysis& analysis);

} // namespace oomlens
