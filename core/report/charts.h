#pragma once

#include "core/analysis/allocatorstate.h"
#include "core/analysis/cardtimeline.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens::report {

struct TimelineMarker
{
    int64_t event = 0;
    std::string label; // "peak 14.2 GiB", "OOM"
    bool oom = false;
};

// A run of columns in one phase (DeviceAnalysis::phaseRuns by majority per column).
struct ChartPhaseRun
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // inclusive
    Phase phase = Phase::Unknown;
};

// What the timeline chart draws: core's TimelineSeries reduced to about `buckets` columns
// (each column's lowest and highest moment, so the peak keeps its true height), and the phases
// merged to column resolution so the SVG stays small.
// A named span of the trace (record_function range, user metadata run), at column resolution.
struct ChartSpan
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // inclusive
    int depth = 0;
    std::string label;
    bool closed = true;
};

struct TimelineChartData
{
    int64_t eventCount = 0;
    std::vector<TimelineSeries::Point> points;
    std::vector<TimelineSeries::ReservedPoint> reserved;
    std::vector<ChartPhaseRun> phases; // Unknown runs omitted
    std::vector<ChartSpan> spans; // at most one per column and row, so thousands of steps stay small
    uint64_t maxAllocated = 0; // exact, over every event
    uint64_t maxReserved = 0;
    int64_t firstTimeUs = 0;
    int64_t lastTimeUs = 0;
};
TimelineChartData timelineChartData(const DeviceAnalysis& device, const TimelineSeries& series, size_t buckets);

// The stacked, categorized timeline: one band per category (parameters at the bottom), the
// reserved line above, phase shading behind, and vertical markers. `restOfCard`: the memory the
// card held outside PyTorch's allocator (context, libraries, other processes; cardtimeline.h),
// drawn as a band on the reserved line where its height is known, titled with its label.
// Returns inline SVG.
std::string timelineSvg(const TimelineChartData& chart, const std::vector<TimelineMarker>& markers,
    std::optional<uint64_t> capacityBytes, const CardTimelineBand* restOfCard = nullptr);

// One horizontal stacked bar per row: the categories of the live bytes at that moment.
struct BreakdownRow
{
    std::string label; // "at the peak", "at the OOM"
    CategoryBytes bytes {};
};
std::string breakdownSvg(const std::vector<BreakdownRow>& rows);

// The allocator's segments at one moment as rows of blocks, live blocks coloured by their
// allocation's category, largest segments first, at most `maxSegments` rows.
std::string allocatorMapSvg(const AllocatorState& state, const DeviceAnalysis& device, size_t maxSegments);

// Axis labels: "2 GiB", "512 MiB", "1.5 GiB".
std::string formatAxisBytes(uint64_t bytes);
// "1,001,681": event counts are long enough to need grouping.
std::string groupedNumber(int64_t value);
// The CSS class of a category's fill, e.g. "cat-optimizer_state".
std::string categoryClass(Category category);

} // namespace oomlens::report
