#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace oomlens {

// Plot-ready view of one device's allocated memory over the trace: per-category live bytes
// after every event, reserved bytes, phases and steps, with min/max downsampling so a
// 3M-event trace redraws at pixel resolution without ever averaging the peak away.
class TimelineData
{
public:
    TimelineData(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device);

    const DeviceAnalysis* device() const { return m_device; }
    const DeviceTrace* trace() const { return m_trace; }
    const Snapshot& snapshot() const { return *m_analysis->snapshot; }
    int64_t eventCount() const { return int64_t(m_time.size()); }

    bool hasTime() const { return m_hasTime; }
    // Monotonic wall-clock time of an event, relative to the first event (microseconds).
    int64_t timeOf(int64_t event) const;
    // The last event at or before `timeUs` (relative); 0 before the first.
    int64_t eventAtTime(int64_t timeUs) const;
    // The same, searching forward from event `from` (a hint: any value gives the right answer,
    // one at or just before the answer gives it fastest).
    int64_t eventAtTime(int64_t timeUs, int64_t from) const;

    // Live requested bytes by category right after `event` (-1: before the first event).
    CategoryBytes stackAt(int64_t event) const;
    uint64_t allocatedAt(int64_t event) const;
    uint64_t reservedAt(int64_t event) const;
    uint64_t maxAllocated() const { return m_maxAllocated; }
    uint64_t maxReserved() const { return m_maxReserved; }
    // Index into device()->allocations of the allocation an alloc/free event belongs to, or -1.
    int32_t allocationOfEvent(int64_t event) const;

    struct Point
    {
        int64_t event;
        CategoryBytes bytes;
    };
    // Buckets are [boundaries[i], boundaries[i+1]) in event indices; per bucket the states with
    // the lowest and the highest total are kept, in event order.
    std::vector<Point> downsample(const std::vector<int64_t>& boundaries) const;

    struct ReservedPoint
    {
        int64_t event;
        uint64_t bytes;
    };
    std::vector<ReservedPoint> reservedPoints(const std::vector<int64_t>& boundaries) const;

    struct PhaseRun
    {
        int64_t first;
        int64_t last;
        Phase phase;
    };
    const std::vector<PhaseRun>& phaseRuns() const { return m_phaseRuns; }
    struct StepStart
    {
        int64_t event;
        int32_t step;
    };
    const std::vector<StepStart>& stepStarts() const { return m_stepStarts; }

private:
    struct Change
    {
        int64_t event;
        int64_t delta;
        Category category;
    };
    struct Block
    {
        size_t minIndex, maxIndex; // change indices
        uint64_t minTotal, maxTotal;
        CategoryBytes minBytes, maxBytes;
    };
    // A min/max pyramid over the changes: a bucket of the downsampling is covered by the largest
    // blocks that fit in it, so a full-zoom redraw of a 3M-event trace reads a few hundred
    // blocks per pixel column instead of every change.
    static constexpr size_t checkpointStride = 64;
    static constexpr std::array<size_t, 3> levelSizes = { 64, 1024, 16384 };

    void buildChanges();
    void buildReserved();
    void buildPhases();
    size_t firstChangeAtOrAfter(int64_t event) const;

    std::shared_ptr<const SnapshotAnalysis> m_analysis;
    const DeviceAnalysis* m_device = nullptr;
    const DeviceTrace* m_trace = nullptr;
    std::vector<int64_t> m_time;
    bool m_hasTime = false;
    std::vector<Change> m_changes;
    std::vector<CategoryBytes> m_checkpoints; // state before change k * checkpointStride; the last is the final state
    std::array<std::vector<Block>, levelSizes.size()>
        m_levels; // level l: block b covers changes [b, b + 1) * levelSizes[l]
    std::vector<int32_t> m_eventAllocation;
    std::vector<ReservedPoint> m_reserved; // value after each segment event; [0] is the start value at event -1
    std::vector<PhaseRun> m_phaseRuns;
    std::vector<StepStart> m_stepStarts;
    uint64_t m_maxAllocated = 0;
    uint64_t m_maxReserved = 0;
};

uint64_t total(const CategoryBytes& bytes);

} // namespace oomlens
