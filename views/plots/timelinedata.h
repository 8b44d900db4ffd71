#pragma once

#include "core/analysis/allocationannotations.h"
#include "core/analysis/annotationspans.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace oomlens {

// Plot-ready view of one device's memory over the trace for the widgets. The wall-clock axis,
// phase runs, step starts and annotation spans are the analysis' (DeviceAnalysis::timeAxis,
// phaseRuns, stepStarts, annotationSpans) and the curves (categories, reserved, min/max
// downsampling) core's TimelineSeries: the same the HTML report draws.
class TimelineData
{
public:
    TimelineData(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device);

    const DeviceAnalysis* device() const { return m_device; }
    const DeviceTrace* trace() const { return m_trace; }
    const Snapshot& snapshot() const { return *m_analysis->snapshot; }
    const TimelineSeries& series() const { return m_series; }
    int64_t eventCount() const { return m_eventCount; }

    bool hasTime() const;
    // Monotonic wall-clock time of an event, relative to the first event that has one
    // (microseconds): time_us's running maximum (series.h runningMaxTime), read from the
    // analysis' checkpoints and at most 16 events instead of a per-event table.
    int64_t timeOf(int64_t event) const;
    // The last event at or before `timeUs` (relative); 0 before the first.
    int64_t eventAtTime(int64_t timeUs) const;

    // Live requested bytes by category right after `event` (-1: before the first event).
    CategoryBytes stackAt(int64_t event) const { return m_series.categoriesAt(event); }
    uint64_t allocatedAt(int64_t event) const { return m_series.allocatedAt(event); }
    uint64_t reservedAt(int64_t event) const { return m_series.reservedAt(event); }
    uint64_t maxAllocated() const { return m_series.maxAllocated(); }
    uint64_t maxReserved() const { return m_series.maxReserved(); }
    // Index into device()->allocations of the allocation an alloc/free event belongs to, or -1.
    int32_t allocationOfEvent(int64_t event) const;

    using Point = TimelineSeries::Point;
    std::vector<Point> downsample(const std::vector<int64_t>& boundaries) const
    {
        return m_series.downsample(boundaries);
    }
    using ReservedPoint = TimelineSeries::ReservedPoint;
    std::vector<ReservedPoint> reservedPoints(const std::vector<int64_t>& boundaries) const
    {
        return m_series.reservedPoints(boundaries);
    }

    const std::vector<PhaseRun>& phaseRuns() const;
    const std::vector<StepStart>& stepStarts() const;
    // record_function ranges, user metadata runs and recompute spans on this device: the
    // analysis' (DeviceAnalysis::annotationSpans), which the report's chart draws too.
    const std::vector<AnnotationSpan>& annotationSpans() const;
    // Notes `_annotate_tensor` attached to single allocations (core/analysis/allocationannotations.h).
    const AllocationAnnotations& allocationAnnotations() const { return m_allocationAnnotations; }

private:
    std::shared_ptr<const SnapshotAnalysis> m_analysis;
    const DeviceAnalysis* m_device = nullptr;
    const DeviceTrace* m_trace = nullptr;
    TimelineSeries m_series;
    int64_t m_eventCount = 0;
    AllocationAnnotations m_allocationAnnotations;
};

} // namespace oomlens
