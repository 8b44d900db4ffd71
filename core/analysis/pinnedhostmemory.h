#pragma once

#include "core/snapshot.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace oomlens {

// Pinned host memory over time (Snapshot::hostMemory): what the CachingHostAllocator held in
// host RAM after each of its trace entries, anchored at the segments it held at the dump. The
// same rules as a device's curve: an alloc adds its block, its free_completed removes it (its
// free_requested where the trace records no free_completed at all), segment_alloc/segment_free
// move the reserved line, and memory the trace never saw allocated is older than the trace and
// held from its start. Host RAM only: nothing here counts toward any card.
struct PinnedHostTimeline
{
    struct Point
    {
        int64_t event = -1; // index into PinnedHostMemory::events; -1: before the first
        int64_t timeUs = 0; // the entry's time_us (0 where the file has none)
        uint64_t allocated = 0; // blocks handed out and not yet freed back to the cache
        uint64_t reserved = 0; // pinned ranges the allocator holds (cudaHostAlloc'd or registered)
    };
    std::vector<Point> points; // the state before the first event, then after every event

    uint64_t olderAllocated = 0; // held before the trace began
    uint64_t olderReserved = 0;
    uint64_t peakAllocated = 0;
    uint64_t peakReserved = 0;
    int64_t peakAllocatedEvent = -1;
    int64_t peakAllocatedTimeUs = 0;

    size_t allocEvents = 0;
    size_t segmentsAtDump = 0;
    size_t liveBlocksAtDump = 0;
    uint64_t reservedAtDump = 0; // Σ host segment total_size
    uint64_t allocatedAtDump = 0; // Σ host segment allocated_size (or its live blocks)

    int64_t firstTimeUs() const { return points.size() > 1 ? points[1].timeUs : 0; }
    int64_t lastTimeUs() const { return points.empty() ? 0 : points.back().timeUs; }
    bool hasTrace() const { return points.size() > 1; }
    // The state at time `timeUs` (the last entry at or before it); nullopt without a trace or
    // before its first entry.
    std::optional<Point> at(int64_t timeUs) const;
};

// Nothing when the snapshot recorded no pinned host memory.
std::optional<PinnedHostTimeline> pinnedHostTimeline(const Snapshot& snapshot);

} // namespace oomlens
