#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// `diagnose --json`'s "pinned_host_memory": one entry per snapshot, null where the snapshot
// recorded no pinned host memory. Host RAM held by PyTorch's CachingHostAllocator at the dump and
// over its trace, and at the primary device's first OOM; none of it is in the device figures.
nlohmann::ordered_json pinnedHostMemoryToJson(const Case& input, const CaseAnalysis& analysis);

} // namespace oomlens
