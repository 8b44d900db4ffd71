#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <array>
#include <cstdint>
#include <vector>

namespace oomlens {

// The categorized memory curve of one device, built once from its analysis and drawn by every
// consumer: the app's timeline, the HTML report, the planner. Live requested bytes by category
// after every event, reserved bytes, and min/max levels so that a redraw at pixel resolution
// of a 3M-event trace reads a few hundred blocks per column and never averages the peak away.
//
// The rules are the analysis' own (core/analysis/reconstruction.cpp): an alloc event adds its
// allocation, its free_completed removes it, a free whose allocation the trace never saw belongs
// to an allocation older than the trace (live from the start), and reserved memory is the
// analysis' reservedAfter, anchored at the dump-time segments.
class TimelineSeries
{
public:
    // Needs the categories assigned (analyzeSnapshot does). Reads `device`'s allocations when
    // asked (a change's size and category are its allocation's), so the analysis must outlive
    // the series and stay where it is: the timeline holds it, the report builds its series on
    // the stack.
    explicit TimelineSeries(const DeviceAnalysis& device);

    int64_t eventCount() const { return m_eventCount; }

    // Live requested bytes by category right after `event` (-1: before the first event).
    CategoryBytes categoriesAt(int64_t event) const;
    uint64_t allocatedAt(int64_t event) const;
    uint64_t reservedAt(int64_t event) const;
    uint64_t maxAllocated() const { return m_maxAllocated; } // exact, over every event
    // Whether any allocation of the device (in the trace or older) is of `category`: legends list
    // the categories only some runs have (communication, kv_cache) where they hold memory.
    bool holds(Category category) const { return m_heldCategories & (1u << unsigned(category)); }
    uint64_t maxReserved() const { return m_maxReserved; }

    struct Point
    {
        int64_t event;
        CategoryBytes bytes;
        uint64_t total() const;
    };
    // Buckets are [boundaries[i], boundaries[i+1]) in event indices (ascending). The first point
    // is the state at boundaries.front(); per bucket the states with the lowest and the highest
    // total follow, in event order; the last point is the state at boundaries.back() - 1.
    std::vector<Point> downsample(const std::vector<int64_t>& boundaries) const;

    struct ReservedPoint
    {
        int64_t event;
        uint64_t bytes;
    };
    // The reserved line over the same buckets: its lowest, highest and last value per bucket.
    std::vector<ReservedPoint> reservedPoints(const std::vector<int64_t>& boundaries) const;

    // `columns` buckets of equal event count over [first, last), at most one per event.
    static std::vector<int64_t> evenBoundaries(int64_t first, int64_t last, int64_t columns);

private:
    // An alloc or free_completed event and what it adds to or removes from the curve, in 8 bytes:
    // a 10M-event trace has up to 10M of them, written once, and on a big trace the first write of
    // a page costs more than the data (bench/README.md). Trace entries are numbered in 32 bits
    // (the decoder refuses more than 4 billion).
    //
    // `step` holds the change itself where it fits, as nearly every tensor does (under 64 MiB):
    // bit 30 set for a removal, the category in bits 26-29 and the bytes below. A bigger one
    // sets bit 31 and names its allocation (index into the analysis' allocations), whose size and
    // category are read when the change is applied: redraws apply a few hundred changes per pixel
    // column, and reading each from the allocations cost a full-zoom pan twice its time.
    struct Change
    {
        uint32_t event;
        uint32_t step;
    };
    static_assert(sizeof(Change) == 8);
    static constexpr uint32_t indirectBit = uint32_t(1) << 31;
    static constexpr uint32_t removalBit = uint32_t(1) << 30;
    static constexpr int categoryShift = 26;
    static constexpr uint32_t inlineBytesLimit = uint32_t(1) << categoryShift;
    static_assert(categoryCount <= 16);
    static Change changeOf(int64_t event, uint32_t allocation, const Allocation& a, bool removal);
    struct Step
    {
        Category category;
        int64_t delta;
    };
    Step stepOf(const Change& change) const;
    struct Block
    {
        size_t minIndex, maxIndex; // change indices
        uint64_t minTotal, maxTotal;
        CategoryBytes minBytes, maxBytes;
    };
    // Checkpoints every checkpointStride changes; level l: block b covers changes
    // [b, b + 1) * levelSizes[l], so a bucket is covered by the largest blocks that fit in it.
    static constexpr size_t checkpointStride = 64;
    static constexpr std::array<size_t, 3> levelSizes = { 64, 1024, 16384 };

    size_t firstChangeAtOrAfter(int64_t event) const;

    int64_t m_eventCount = 0;
    const Allocation* m_allocations = nullptr; // the analysis', not copied
    std::vector<Change> m_changes; // in event order, at most one per event
    std::vector<CategoryBytes> m_checkpoints; // state before change k * checkpointStride; the last is the final state
    std::array<std::vector<Block>, levelSizes.size()> m_levels;
    std::vector<ReservedPoint> m_reserved; // where the value changes; [0] is the value before the first event
    uint64_t m_maxAllocated = 0;
    uint64_t m_maxReserved = 0;
    uint32_t m_heldCategories = 0; // bit per Category
};

uint64_t total(const CategoryBytes& bytes);

// The analysis' per-event totals (DeviceAnalysis::allocatedAfter / reservedAfter) right after
// `event` (-1: before the first event).
uint64_t allocatedAt(const DeviceAnalysis& device, int64_t event);
uint64_t reservedAt(const DeviceAnalysis& device, int64_t event);

// The first event whose time_us reaches timeUs (time_us is approximate and not strictly
// monotonic, so this uses the running maximum); the trace length when none. `trace` is the
// device's trace the analysis was built from. Cost: a binary search over timeCheckpoints plus
// at most checkpointInterval events.
int64_t eventAtTime(const DeviceAnalysis& device, const DeviceTrace& trace, int64_t timeUs);

// The running maximum of time_us over events [0, event] of the device's trace, the monotonic clock
// the views' time axis is drawn on; INT64_MIN before the first event. Same cost as eventAtTime's
// scan, without the search.
int64_t runningMaxTime(const DeviceAnalysis& device, const DeviceTrace& trace, int64_t event);

// An event's time on the axis the timelines draw (DeviceAnalysis::timeAxis): microseconds after
// its origin on the running maximum; 0 before the first event with a time and for -1.
int64_t timeSinceStart(const DeviceAnalysis& device, const DeviceTrace& trace, int64_t event);
// The last event at or before `sinceStartUs` on that axis; 0 before the first.
int64_t eventAtTimeSinceStart(const DeviceAnalysis& device, const DeviceTrace& trace, int64_t sinceStartUs);

// Fills DeviceAnalysis::timeCheckpoints and timeAxis from the device's trace.
void buildTimeCheckpoints(const DeviceTrace* trace, DeviceAnalysis& device);

} // namespace oomlens
