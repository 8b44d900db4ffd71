#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// One pixel column of the timeline: min and max so that the peak and an OOM spike never
// average away, and the categories at the bucket's maximum for the stacked bands.
struct Bucket
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // exclusive
    uint64_t minAllocated = 0;
    uint64_t maxAllocated = 0;
    int64_t maxEvent = -1; // where maxAllocated is reached
    CategoryBytes categoriesAtMax {};
    uint64_t minReserved = 0;
    uint64_t maxReserved = 0;
};

// Buckets the events [firstEvent, lastEvent) into at most `buckets` columns of equal event
// count. Cost: one pass over the range plus at most checkpointInterval events per bucket.
std::vector<Bucket> downsample(const DeviceAnalysis& device, int64_t firstEvent, int64_t lastEvent, int buckets);

// Requested bytes live right after `event` (-1: before the first event).
uint64_t allocatedAt(const DeviceAnalysis& device, int64_t event);
uint64_t reservedAt(const DeviceAnalysis& device, int64_t event);
// The same split by category; adds up to allocatedAt().
CategoryBytes categoryBytesAt(const DeviceAnalysis& device, int64_t event);

// The first event whose time_us reaches timeUs (time_us is approximate and not strictly
// monotonic, so this uses the running maximum); the trace length when none. `trace` is the
// device's trace the analysis was built from. Cost: a binary search over timeCheckpoints plus
// at most checkpointInterval events.
int64_t eventAtTime(const DeviceAnalysis& device, const DeviceTrace& trace, int64_t timeUs);

// Fills DeviceAnalysis::categoryCheckpoints; call after categories are assigned.
void buildCategoryCheckpoints(DeviceAnalysis& device);
// Fills DeviceAnalysis::timeCheckpoints from the device's trace.
void buildTimeCheckpoints(const DeviceTrace* trace, DeviceAnalysis& device);

} // namespace oomlens
