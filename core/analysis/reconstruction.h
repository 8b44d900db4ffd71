#pragma once

#include "core/analysis/snapshotanalysis.h"

namespace oomlens {

// Rebuilds one device's allocations from its trace and the dump-time segments, the way
// memory_viz's Active Memory Timeline counts them: an alloc opens an allocation, its
// free_completed closes it; a free whose alloc fell out of the ring buffer, and a block still
// active at dump time with no open alloc, are allocations older than the trace.
// Fills allocations (no categories yet), eventAllocation, allocatedAfter, reservedAfter,
// initialAllocatedBytes, initialReservedBytes, traceTruncated and warnings.
void reconstructTimeline(const Snapshot& snapshot, int32_t device, DeviceAnalysis& out);

// The caching allocator's block size for a request: at least 512 bytes, a multiple of 512.
// Only an estimate for blocks gone by the dump: an unsplittable remainder stays with the block.
uint64_t estimatedBlockSize(uint64_t requested);

} // namespace oomlens
