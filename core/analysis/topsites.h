#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace oomlens {

// The call sites holding the most requested bytes right after the peak event (allocations older
// than the trace included, as the peak counts them): each allocation's user frame
// (analysis/userframe.h) as "model.py:12 forward", or "(no stack)"; largest first, at most
// `limit`, ties by name. Empty when the snapshot recorded no frames. A job's rank summary and the
// app's overview both name a peak's holders by this.
std::vector<std::pair<std::string, uint64_t>> topSitesAtPeak(
    const Snapshot& snapshot, const DeviceAnalysis& device, size_t limit);

} // namespace oomlens
