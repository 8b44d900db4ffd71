#pragma once

#include "core/compare/comparison.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// The `compare --json` document of product.md §5: {"tool":"oomlens","compare":{"a":{
// "peak_allocated_bytes","categories_at_peak"},"b":{…},"categories_delta":{cat: b−a},"sites":[{
// "stack","category","a_bytes","b_bytes","delta_bytes"}],"summary"}}, extended (never renamed)
// with each side's peak moment and OOM, the deltas at the OOM, each site's phase, totals and
// status, and for windows the leak check ("surviving").
nlohmann::ordered_json comparisonToJson(const Comparison& comparison);

} // namespace oomlens
