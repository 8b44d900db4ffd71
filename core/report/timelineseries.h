#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <vector>

namespace oomlens::report {

// One sample of the downsampled timeline: the live bytes per category and the reserved bytes
// right after trace event `event`.
struct TimelinePoint
{
    int64_t event = 0;
    CategoryBytes live {};
    uint64_t reserved = 0;
    uint64_t total() const;
};

struct PhaseRun
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // inclusive
    Phase phase = Phase::Unknown;
};

// The categorized timeline of one device, reduced to about `buckets` buckets. Each bucket keeps
// the sample where the allocated total is lowest and the one where it is highest, in event
// order, so neither the peak nor a dip ever averages away; the reserved line likewise keeps
// its bucket maximum.
struct TimelineSeries
{
    int64_t eventCount = 0;
    std::vector<TimelinePoint> points;
    std::vector<PhaseRun> phases; // merged to bucket resolution; Unknown runs omitted
    uint64_t maxAllocated = 0; // exact, over every event
    uint64_t maxReserved = 0; // exact, over every event
    int64_t firstTimeUs = 0;
    int64_t lastTimeUs = 0;
};

TimelineSeries buildTimelineSeries(const Snapshot& snapshot, const DeviceAnalysis& device, size_t buckets = 1000);

// Requested bytes of the allocations live right after `event` (-1: before the first event).
CategoryBytes liveAt(const DeviceAnalysis& device, int64_t event);
// The allocations live right after `event`, largest first, at most `limit`.
std::vector<const Allocation*> largestLiveAt(const DeviceAnalysis& device, int64_t event, size_t limit);

} // namespace oomlens::report
