#include "core/analysis/series.h"
#include "core/compare/compareparts.h"

#include <algorithm>
#include <cmath>

namespace oomlens::compare {

namespace {

struct EventRange
{
    int64_t first = 0;
    int64_t last = -1; // inclusive
};

// Where one side's events sit on the shared axis: one range for the time-normalised axis, one per
// step (in trace order) for the step-aligned one.
class SideAxis
{
public:
    SideAxis(const ComparisonSide& side, const SideSource& source, bool byStep)
        : m_device(*source.device)
        , m_trace(source.analysis->snapshot->trace(source.device->device))
    {
        if (side.lastEvent < side.firstEvent)
            return;
        if (!byStep) {
            m_ranges.push_back({ side.firstEvent, side.lastEvent });
            return;
        }
        // Every event has a known step here (knownSteps): the analysis' step starts cut the range.
        m_ranges.push_back({ side.firstEvent, side.lastEvent });
        for (const StepStart& start : m_device.stepStarts) {
            if (start.event <= side.firstEvent || start.event > side.lastEvent)
                continue;
            m_ranges.back().last = start.event - 1;
            m_ranges.push_back({ start.event, side.lastEvent });
        }
    }

    size_t segments() const { return m_ranges.size(); }
    int32_t firstStep() const { return m_ranges.empty() ? -1 : stepOf(m_ranges.front().first); }

    // The lowest and highest allocated bytes over fraction [from, to) of segment `index`.
    OverlayLevels levels(size_t index, double from, double to) const
    {
        OverlayLevels levels;
        if (index >= m_ranges.size())
            return levels;
        const EventRange& range = m_ranges[index];
        const int64_t begin = boundary(range, from);
        const int64_t end = std::max(begin, boundary(range, to));
        levels.present = true;
        if (begin == end) {
            // No event in this column: the level of the last one before it holds.
            levels.low = levels.high = allocatedAt(m_device, begin - 1);
            return levels;
        }
        levels.low = UINT64_MAX;
        for (int64_t e = begin; e < end; ++e) {
            const uint64_t bytes = m_device.allocatedAfter[static_cast<size_t>(e)];
            levels.low = std::min(levels.low, bytes);
            levels.high = std::max(levels.high, bytes);
        }
        return levels;
    }

private:
    int32_t stepOf(int64_t event) const { return m_device.eventStep[static_cast<size_t>(event)]; }

    int64_t timeOf(int64_t event) const { return m_trace->events[static_cast<size_t>(event)].timeUs; }

    // The first event at `fraction` of the range's time (of its event count where it has no times).
    int64_t boundary(const EventRange& range, double fraction) const
    {
        const int64_t count = range.last - range.first + 1;
        if (fraction >= 1.0)
            return range.last + 1;
        if (m_trace && timeOf(range.last) > timeOf(range.first)) {
            const double span = static_cast<double>(timeOf(range.last) - timeOf(range.first));
            const auto at = timeOf(range.first) + static_cast<int64_t>(std::llround(fraction * span));
            return std::clamp(eventAtTime(m_device, *m_trace, at), range.first, range.last + 1);
        }
        return range.first + static_cast<int64_t>(std::floor(fraction * static_cast<double>(count)));
    }

    const DeviceAnalysis& m_device;
    const DeviceTrace* m_trace;
    std::vector<EventRange> m_ranges;
};

bool knownSteps(const ComparisonSide& side, const DeviceAnalysis& device)
{
    if (side.lastEvent < side.firstEvent || device.eventStep.size() <= static_cast<size_t>(side.lastEvent))
        return false;
    for (int64_t e = side.firstEvent; e <= side.lastEvent; ++e) {
        if (device.eventStep[static_cast<size_t>(e)] < 0)
            return false;
    }
    return true;
}

} // namespace

ComparisonTimeline overlayTimelines(const ComparisonSide& a, const SideSource& sourceA, const ComparisonSide& b,
    const SideSource& sourceB, size_t columns)
{
    ComparisonTimeline timeline;
    // Steps line up when both sides have them: step 3's backward over step 3's backward, not over
    // whatever happened at the same fraction of a longer run.
    // Event ranges picked by hand start mid-step: they stay time-normalised.
    const bool stepWindows = a.window.has_value() && b.window.has_value();
    const bool wholeRuns = a.wholeTrace && b.wholeTrace && a.stepCount > 0 && b.stepCount > 0;
    timeline.stepAligned
        = knownSteps(a, *sourceA.device) && knownSteps(b, *sourceB.device) && (stepWindows || wholeRuns);
    const SideAxis axisA(a, sourceA, timeline.stepAligned);
    const SideAxis axisB(b, sourceB, timeline.stepAligned);
    const size_t segments = std::max<size_t>(1, std::max(axisA.segments(), axisB.segments()));
    const size_t perSegment = std::max<size_t>(1, std::max<size_t>(columns, 1) / segments);
    timeline.axisEnd = timeline.stepAligned ? static_cast<double>(segments) : 1.0;
    if (timeline.stepAligned) {
        timeline.firstStepA = axisA.firstStep();
        timeline.firstStepB = axisB.firstStep();
    }
    timeline.columns.reserve(segments * perSegment);
    for (size_t segment = 0; segment < segments; ++segment) {
        for (size_t c = 0; c < perSegment; ++c) {
            const double from = static_cast<double>(c) / static_cast<double>(perSegment);
            const double to = static_cast<double>(c + 1) / static_cast<double>(perSegment);
            OverlayColumn column;
            column.start = static_cast<double>(segment) + from;
            column.end = static_cast<double>(segment) + to;
            if (!timeline.stepAligned) {
                column.start = from;
                column.end = to;
            }
            column.a = axisA.levels(segment, from, to);
            column.b = axisB.levels(segment, from, to);
            timeline.maxBytes = std::max({ timeline.maxBytes, column.a.high, column.b.high });
            timeline.columns.push_back(column);
        }
    }
    return timeline;
}

} // namespace oomlens::compare
