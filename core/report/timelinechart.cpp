#include "core/report/charts.h"

#include "core/analysis/annotationspans.h"
#include "core/analysis/recomputespans.h"
#include "core/presentation/labels.h"
#include "core/report/chartframe.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace oomlens::report {

namespace {

constexpr const PlotFrame& frame = frames::timeline;
constexpr double plotLeft = frame.left;
constexpr double plotRight = frame.right;
constexpr double plotTop = frame.top;
constexpr double plotBottom = frame.bottom;
constexpr int maxSpanRows = 3; // deeper record_function nesting is folded into the last row
constexpr double spanRowHeight = 12;

int64_t niceCountStep(int64_t maximum)
{
    int64_t magnitude = 1;
    while (true) {
        for (int64_t mantissa : { 1, 2, 5 }) {
            if (maximum / (mantissa * magnitude) <= 8)
                return mantissa * magnitude;
        }
        magnitude *= 10;
    }
}

// The phase of each column by majority, merged into runs.
std::vector<PhaseRun> phaseRuns(const DeviceAnalysis& device, size_t eventCount, size_t bucketCount)
{
    std::vector<PhaseRun> runs;
    if (device.eventPhase.size() != eventCount || eventCount == 0)
        return runs;
    for (size_t b = 0; b < bucketCount; ++b) {
        const size_t first = (b * eventCount + bucketCount - 1) / bucketCount;
        const size_t end = ((b + 1) * eventCount + bucketCount - 1) / bucketCount;
        std::array<uint32_t, phaseCount> votes {};
        for (size_t i = first; i < end; ++i)
            ++votes[static_cast<size_t>(device.eventPhase[i])];
        const auto phase = static_cast<Phase>(std::max_element(votes.begin(), votes.end()) - votes.begin());
        if (!runs.empty() && runs.back().phase == phase)
            runs.back().lastEvent = static_cast<int64_t>(end) - 1;
        else
            runs.push_back({ static_cast<int64_t>(first), static_cast<int64_t>(end) - 1, phase });
    }
    std::erase_if(runs, [](const PhaseRun& run) { return run.phase == Phase::Unknown; });
    return runs;
}

} // namespace

namespace {

// Spans narrower than a column are kept only when their row's previous span ended in an earlier
// column: the picture is the same and the SVG stays a few hundred elements.
std::vector<ChartSpan> chartSpans(
    const Snapshot& snapshot, const DeviceAnalysis& device, int64_t events, size_t columns)
{
    std::vector<ChartSpan> spans;
    const double perColumn = static_cast<double>(events) / static_cast<double>(std::max<size_t>(columns, 1));
    std::array<int64_t, maxSpanRows> lastColumn;
    lastColumn.fill(-1);
    for (const AnnotationSpan& span : annotationAndRecomputeSpans(snapshot, device)) {
        if (span.mark || span.lastEvent < span.firstEvent)
            continue;
        const int row = std::min(span.depth, maxSpanRows - 1);
        const auto column = static_cast<int64_t>(static_cast<double>(span.lastEvent) / perColumn);
        if (column <= lastColumn[static_cast<size_t>(row)])
            continue;
        lastColumn[static_cast<size_t>(row)] = column;
        spans.push_back({ span.firstEvent, span.lastEvent, row, std::string(annotationLabel(span.name)), span.closed });
    }
    return spans;
}

} // namespace

TimelineChartData timelineChartData(
    const Snapshot& snapshot, const DeviceAnalysis& device, const TimelineSeries& series, size_t buckets)
{
    TimelineChartData chart;
    chart.eventCount = series.eventCount();
    chart.maxAllocated = series.maxAllocated();
    chart.maxReserved = series.maxReserved();
    if (chart.eventCount == 0) {
        // No trace: the dump-time state is the one sample.
        chart.points.push_back({ 0, series.categoriesAt(-1) });
        chart.reserved.push_back({ 0, series.reservedAt(-1) });
        return chart;
    }
    const std::vector<int64_t> boundaries
        = TimelineSeries::evenBoundaries(0, chart.eventCount, static_cast<int64_t>(std::max<size_t>(1, buckets)));
    chart.points = series.downsample(boundaries);
    chart.reserved = series.reservedPoints(boundaries);
    chart.phases = phaseRuns(device, static_cast<size_t>(chart.eventCount), boundaries.size() - 1);
    chart.spans = chartSpans(snapshot, device, chart.eventCount, boundaries.size() - 1);
    if (const DeviceTrace* trace = snapshot.trace(device.device); trace && !trace->events.empty()) {
        chart.firstTimeUs = trace->events.front().timeUs;
        chart.lastTimeUs = trace->events.back().timeUs;
    }
    return chart;
}

std::string timelineSvg(const TimelineChartData& series, const std::vector<TimelineMarker>& markers,
    std::optional<uint64_t> capacityBytes, const CardTimelineBand* restOfCard)
{
    SvgWriter svg(frame.width, frame.height, "chart timeline", "Allocated memory by category over the trace");
    const uint64_t top = std::max({ series.maxAllocated,
        series.maxReserved + (restOfCard ? restOfCard->maxOutside() : 0), capacityBytes.value_or(0), uint64_t(1) });
    const ByteAxis axis = byteAxisFor(top);
    const double eventSpan = std::max<double>(1.0, static_cast<double>(series.eventCount - 1));
    const auto xOf
        = [&](int64_t event) { return plotLeft + (plotRight - plotLeft) * static_cast<double>(event) / eventSpan; };
    const auto yOf = [&](uint64_t bytes) {
        return plotBottom - (plotBottom - plotTop) * static_cast<double>(bytes) / static_cast<double>(axis.max);
    };

    for (const PhaseRun& run : series.phases) {
        const std::string name(phaseName(run.phase));
        const double left = xOf(run.firstEvent);
        const double right = series.eventCount > 1 ? xOf(run.lastEvent + 1) : plotRight;
        svg.rect(left, plotTop, std::min(right, plotRight) - left, plotBottom - plotTop, "phase phase-" + name,
            std::string(phaseLabel(run.phase)) + ", events " + groupedNumber(run.firstEvent) + "–"
                + groupedNumber(run.lastEvent));
    }

    drawByteGrid(svg, frame, axis);
    if (series.eventCount > 1) {
        const int64_t xStep = niceCountStep(series.eventCount);
        for (int64_t event = 0; event < series.eventCount; event += xStep) {
            svg.line(xOf(event), plotBottom, xOf(event), plotBottom + 4, "axis");
            const bool nearRightEdge = xOf(event) > plotRight - 32;
            svg.text(xOf(event), plotBottom + 17, groupedNumber(event), "tick",
                nearRightEdge ? SvgWriter::Anchor::End : SvgWriter::Anchor::Middle);
        }
    }
    std::string axisTitle = "trace event (" + groupedNumber(series.eventCount) + " events";
    if (series.lastTimeUs > series.firstTimeUs)
        axisTitle += ", " + formatDurationUs(series.lastTimeUs - series.firstTimeUs);
    axisTitle += ")";
    svg.text((plotLeft + plotRight) / 2, frame.height - 10, axisTitle, "axis-title", SvgWriter::Anchor::Middle);

    // A single sample (no trace) still deserves a visible band: stretch it across the plot.
    std::vector<TimelineSeries::Point> points = series.points;
    std::vector<TimelineSeries::ReservedPoint> reserved = series.reserved;
    if (points.size() == 1) {
        points.push_back(points.front());
        points.back().event = std::max<int64_t>(1, series.eventCount - 1);
    }
    if (reserved.size() == 1) {
        reserved.push_back(reserved.front());
        reserved.back().event = std::max<int64_t>(1, series.eventCount - 1);
    }
    const auto xOfEvent
        = [&](int64_t event) { return series.eventCount > 1 ? xOf(event) : (event == 0 ? plotLeft : plotRight); };

    std::vector<uint64_t> below(points.size(), 0);
    for (int c = 0; c < categoryCount; ++c) {
        uint64_t bandMax = 0;
        for (const TimelineSeries::Point& point : points)
            bandMax = std::max(bandMax, point.bytes[static_cast<size_t>(c)]);
        if (bandMax == 0)
            continue;
        // Steps, as the app draws them: a state holds until the next sample, which may be far
        // away when nothing changed in between.
        std::vector<std::pair<double, double>> outline;
        outline.reserve(points.size() * 4);
        for (size_t i = 0; i < points.size(); ++i) {
            const double x = xOfEvent(points[i].event);
            if (i > 0)
                outline.emplace_back(x, outline.back().second);
            outline.emplace_back(x, yOf(below[i] + points[i].bytes[static_cast<size_t>(c)]));
        }
        for (size_t i = points.size(); i-- > 0;) {
            outline.emplace_back(xOfEvent(points[i].event), yOf(below[i]));
            if (i > 0)
                outline.emplace_back(xOfEvent(points[i].event), yOf(below[i - 1]));
        }
        const auto category = static_cast<Category>(c);
        svg.polygon(outline, "band " + categoryClass(category),
            std::string(categoryLabel(category)) + ": up to " + formatBytes(bandMax));
        for (size_t i = 0; i < points.size(); ++i)
            below[i] += points[i].bytes[static_cast<size_t>(c)];
    }

    if (restOfCard && restOfCard->maxOutside() > 0 && !reserved.empty()) {
        // Stacked on the reserved steps: its top edge, then the reserved line back; one polygon
        // per run of points where the band's height is known.
        const std::string title = restOfCard->label.empty() ? "outside PyTorch's allocator" : restOfCard->label;
        size_t first = 0;
        while (first < reserved.size()) {
            size_t last = first;
            while (last < reserved.size() && restOfCard->outsideAt(reserved[last].event))
                ++last;
            if (last - first >= 2) {
                std::vector<std::pair<double, double>> outline;
                outline.reserve((last - first) * 4);
                for (size_t i = first; i < last; ++i) {
                    const double x = xOfEvent(reserved[i].event);
                    if (!outline.empty())
                        outline.emplace_back(x, outline.back().second);
                    outline.emplace_back(x, yOf(reserved[i].bytes + *restOfCard->outsideAt(reserved[i].event)));
                }
                for (size_t i = last; i-- > first;) {
                    outline.emplace_back(xOfEvent(reserved[i].event), yOf(reserved[i].bytes));
                    if (i > first)
                        outline.emplace_back(xOfEvent(reserved[i].event), yOf(reserved[i - 1].bytes));
                }
                svg.polygon(outline, "rest-of-card", title);
            }
            first = std::max(last, first + 1);
        }
    }
    if (series.maxReserved > 0) {
        std::vector<std::pair<double, double>> reservedLine;
        reservedLine.reserve(reserved.size() * 2);
        for (const TimelineSeries::ReservedPoint& point : reserved) {
            if (!reservedLine.empty())
                reservedLine.emplace_back(xOfEvent(point.event), reservedLine.back().second);
            reservedLine.emplace_back(xOfEvent(point.event), yOf(point.bytes));
        }
        svg.beginGroup("reserved", "reserved by the caching allocator: up to " + formatBytes(series.maxReserved));
        svg.polyline(reservedLine, "reserved-line");
        svg.endGroup();
    }
    for (const ChartSpan& span : series.spans) {
        const double left = xOfEvent(span.firstEvent);
        const double right = std::max(left + 1, xOfEvent(std::min(span.lastEvent + 1, series.eventCount - 1)));
        const double y = plotTop + 1 + spanRowHeight * span.depth;
        svg.rect(left, y, right - left, spanRowHeight - 2, span.closed ? "span-bar" : "span-bar open",
            span.label + ": events " + groupedNumber(span.firstEvent) + "–" + groupedNumber(span.lastEvent)
                + (span.closed ? "" : " (no end recorded)"));
        // 6 px per character is the chart font's width, near enough to keep labels inside bars.
        if (right - left > 6.0 * static_cast<double>(span.label.size()) + 6)
            svg.text(left + 3, y + spanRowHeight - 4, span.label, "span-label small");
    }

    if (capacityBytes) {
        const double y = yOf(*capacityBytes);
        svg.line(plotLeft, y, plotRight, y, "capacity-line");
        // Left-aligned: the peak and OOM markers usually crowd the right edge.
        svg.text(plotLeft + 4, y - 4, "GPU capacity " + formatBytes(*capacityBytes), "marker-label");
    }

    for (const TimelineMarker& marker : markers) {
        const double x
            = series.eventCount > 1 ? xOf(std::clamp<int64_t>(marker.event, 0, series.eventCount - 1)) : plotRight;
        svg.line(x, plotTop - 8, x, plotBottom, marker.oom ? "marker oom-marker" : "marker peak-marker");
        const bool rightHalf = x > (plotLeft + plotRight) / 2;
        svg.text(rightHalf ? x - 4 : x + 4, plotTop - 10 + (marker.oom ? 0 : 12), marker.label, "marker-label",
            rightHalf ? SvgWriter::Anchor::End : SvgWriter::Anchor::Start);
    }
    return svg.finish();
}

} // namespace oomlens::report
