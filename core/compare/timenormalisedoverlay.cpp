#include "core/compare/timenormalisedoverlay.h"

#include "core/analysis/series.h"

#include <algorithm>

namespace oomlens {

namespace {

// One side's allocated levels over `columns` equal parts of its compared events.
std::vector<OverlayLevels> sideLevels(const ComparisonSide& side, const DeviceAnalysis& device, size_t columns)
{
    std::vector<OverlayLevels> levels(columns);
    const DeviceTrace* trace = side.snapshot ? side.snapshot->trace(device.device) : nullptr;
    const int64_t first = std::max<int64_t>(side.firstEvent, 0);
    const int64_t last = std::min<int64_t>(side.lastEvent, int64_t(device.allocatedAfter.size()) - 1);
    if (!trace || last < first || columns == 0)
        return levels;
    // Each event where the timelines draw it: on the analysis' time axis, where a clock that steps
    // back holds its running maximum and events before the first with a time sit at the origin.
    // Raw time_us would end the span at a last event whose clock stepped back (events past it
    // pile into the last column), or start it at a missing (zero) first time, the epoch, which
    // crowds the whole run into the last column.
    const auto timeOf = [&](int64_t event) { return timeSinceStart(device, *trace, event); };
    const int64_t startUs = timeOf(first);
    const bool byTime = device.timeAxis.hasTime && timeOf(last) > startUs;
    const double span = byTime ? double(timeOf(last) - startUs) : double(std::max<int64_t>(last - first, 1));
    uint64_t level = first > 0 ? device.allocatedAfter[size_t(first - 1)] : device.initialAllocatedBytes;
    int64_t event = first;
    for (size_t c = 0; c < columns; ++c) {
        const double end = double(c + 1) / double(columns);
        OverlayLevels& column = levels[c];
        // A column with no event of its own holds the level the previous one ended at.
        column = { true, level, level };
        while (event <= last) {
            const double at = byTime ? double(timeOf(event) - startUs) / span : double(event - first) / span;
            if (at >= end && c + 1 < columns)
                break;
            level = device.allocatedAfter[size_t(event)];
            column.low = std::min(column.low, level);
            column.high = std::max(column.high, level);
            ++event;
        }
    }
    return levels;
}

} // namespace

ComparisonTimeline timeNormalisedOverlay(
    const Comparison& comparison, const DeviceAnalysis& a, const DeviceAnalysis& b, size_t columns)
{
    ComparisonTimeline timeline;
    const std::vector<OverlayLevels> levelsA = sideLevels(comparison.a, a, columns);
    const std::vector<OverlayLevels> levelsB = sideLevels(comparison.b, b, columns);
    timeline.columns.reserve(columns);
    for (size_t c = 0; c < columns; ++c) {
        OverlayColumn column;
        column.start = double(c) / double(columns);
        column.end = double(c + 1) / double(columns);
        column.a = levelsA[c];
        column.b = levelsB[c];
        timeline.maxBytes = std::max({ timeline.maxBytes, column.a.high, column.b.high });
        timeline.columns.push_back(column);
    }
    return timeline;
}

} // namespace oomlens
