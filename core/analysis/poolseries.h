#pragma once

#include "core/analysis/allocatorstate.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// Fragmentation over time, per stream and pool: what each pool reserves, what its live blocks
// use, and the largest free block a request to it could still get. Columns are the same as
// TimelineSeries::evenBoundaries() for the same range, so the GUI and the report can draw them
// under the timeline.
struct PoolBucket
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // exclusive
    uint64_t minReserved = 0;
    uint64_t maxReserved = 0;
    uint64_t minActive = 0; // rounded sizes of the pool's live blocks
    uint64_t maxActive = 0;
    uint64_t maxCached = 0; // reserved - active at its largest in the column
    int64_t maxCachedEvent = -1;
    uint64_t largestFreeBlock = 0; // right after the column's last event
};

struct PoolSeries
{
    PoolKey key;
    std::vector<PoolBucket> buckets;
    uint64_t maxReserved = 0; // over the range
    uint64_t maxCached = 0;
};

// One series per pool that holds memory at some point of the trace, ordered by key. Cost: one
// pass over the events up to lastEvent; with largestFreeBlocks, an ordered set of the live
// blocks besides and one walk over them per column.
std::vector<PoolSeries> poolSeries(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t firstEvent,
    int64_t lastEvent, int buckets, bool largestFreeBlocks = true);

} // namespace oomlens
