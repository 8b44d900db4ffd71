#pragma once

#include "core/analysis/allocatorstate.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/report/timelineseries.h"

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

// The stacked, categorized timeline: one band per category (parameters at the bottom), the
// reserved line above, phase shading behind, and vertical markers. Returns inline SVG.
std::string timelineSvg(
    const TimelineSeries& series, const std::vector<TimelineMarker>& markers, std::optional<uint64_t> capacityBytes);

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
