#pragma once

#include "core/planner/planresult.h"

#include <nlohmann/json.hpp>

namespace oomlens::planner {

// The `plan --json` document of product.md §5: {"tool":"oomlens","plan":{"per_gpu_bytes":{…},
// "total_per_gpu_bytes", "host_bytes", "peak_phase", "fits", "max_micro_batch", "calibration",
// "ds_config"}}, extended (never renamed) with the model, the set-up, the phases, the card, the
// table of common cards, the ladder and the notes.
nlohmann::ordered_json planToJson(const PlanResult& result);

} // namespace oomlens::planner
