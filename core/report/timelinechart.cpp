#include "core/report/charts.h"

#include "core/analysis/annotationspans.h"
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

// The phase of each column by majority, merged into runs. The votes are the analysis' phase runs
// (DeviceAnalysis::phaseRuns) overlapping the column; events in no run vote Unknown.
std::array<uint64_t, phaseCount> columnVotes(
    const std::vector<PhaseRun>& runs, size_t& next, int64_t first, int64_t end)
{
    std::array<uint64_t, phaseCount> votes {};
    while (next < runs.size() && runs[next].lastEvent < first)
        ++next;
    uint64_t known = 0;
    for (size_t r = next; r < runs.size() && runs[r].firstEvent < end; ++r) {
        const int64_t overlap = std::min(runs[r].lastEvent, end - 1) - std::max(runs[r].firstEvent, first) + 1;
        votes[static_cast<size_t>(runs[r].phase)] += static_cast<uint64_t>(overlap);
        known += static_cast<uint64_t>(overlap);
    }
    votes[static_cast<size_t>(Phase::Unknown)] += static_cast<uint64_t>(end - first) - known;
    return votes;
}

std::vector<ChartPhaseRun> columnPhases(const DeviceAnalysis& device, size_t eventCount, size_t bucketCount)
{
    std::vector<ChartPhaseRun> runs;
    if (device.eventPhase.size() != eventCount || eventCount == 0)
        return runs;
    size_t next = 0;
    for (size_t b = 0; b < bucketCount; ++b) {
        const auto first = static_cast<int64_t>((b * eventCount + bucketCount - 1) / bucketCount);
        const auto end = static_cast<int64_t>(((b + 1) * eventCount + bucketCount - 1) / bucketCount);
        const auto votes = columnVotes(device.phaseRuns, next, first, end);
        const auto phase = static_cast<Phase>(std::max_element(votes.begin(), votes.end()) - votes.begin());
        if (!runs.empty() && runs.back().phase == phase)
            runs.back().lastEvent = end - 1;
        else
            runs.push_back({ first, end - 1, phase });
    }
    std::erase_if(runs, [](const ChartPhaseRun& run) { return run.phase == Phase::Unknown; });
    return runs;
}

} // namespace

namespace {

// The analysis' spans (DeviceAnalysis::annotationSpans, what the app's timeline draws too).
// Spans narrower than a column are kept only when their row's previous span ended in an earlier
// column: the picture is the same and the SVG stays a few hundred elements.
std::vector<ChartSpan> chartSpans(const DeviceAnalysis& device, int64_t events, size_t columns)
{
    std::vector<ChartSpan> spans;
    const double perColumn = static_cast<double>(events) / static_cast<double>(std::max<size_t>(columns, 1));
    std::array<int64_t, maxSpanRows> lastColumn;
    lastColumn.fill(-1);
    for (const AnnotationSpan& span : device.annotationSpans) {
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

TimelineChartData timelineChartData(const DeviceAnalysis& device, const TimelineSeries& series, size_t buckets)
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
    chart.phases = columnPhases(device, static_cast<size_t>(chart.eventCount), boundaries.size() - 1);
    chart.spans = chartSpans(device, chart.eventCount, boundaries.size() - 1);
    chart.firstTimeUs = device.timeAxis.firstUs;
    chart.lastTimeUs = device.timeAxis.lastUs;
    return chart;
}

namespace {

// Where an event and a byte count land in the timeline's frame.
struct ChartScale
{
    ChartScale(const TimelineChartData& series, uint64_t top)
        : axis(byteAxisFor(top))
        , eventCount(series.eventCount)
        , eventSpan(std::max<double>(1.0, static_cast<double>(series.eventCount - 1)))
    { }
    double xOf(int64_t event) const
    {
        return frame.left + (frame.right - frame.left) * static_cast<double>(event) / eventSpan;
    }
    double yOf(uint64_t bytes) const
    {
        return frame.bottom - (frame.bottom - frame.top) * static_cast<double>(bytes) / static_cast<double>(axis.max);
    }
    // A trace of one event or none spans the plot from its left edge to its right.
    double xOfEvent(int64_t event) const
    {
        return eventCount > 1 ? xOf(event) : (event == 0 ? frame.left : frame.right);
    }

    ByteAxis axis;
    int64_t eventCount;
    double eventSpan;
};

void drawPhases(SvgWriter& svg, const ChartScale& scale, const TimelineChartData& series)
{
    for (const ChartPhaseRun& run : series.phases) {
        const std::string name(phaseName(run.phase));
        const double left = scale.xOf(run.firstEvent);
        const double right = series.eventCount > 1 ? scale.xOf(run.lastEvent + 1) : frame.right;
        svg.rect(left, frame.top, std::min(right, frame.right) - left, frame.bottom - frame.top, "phase phase-" + name,
            std::string(phaseLabel(run.phase)) + ", events " + groupedNumber(run.firstEvent) + "–"
                + groupedNumber(run.lastEvent));
    }
}

void drawEventAxis(SvgWriter& svg, const ChartScale& scale, const TimelineChartData& series)
{
    if (series.eventCount > 1) {
        const int64_t xStep = niceCountStep(series.eventCount);
        for (int64_t event = 0; event < series.eventCount; event += xStep) {
            const double x = scale.xOf(event);
            svg.line(x, frame.bottom, x, frame.bottom + 4, "axis");
            const bool nearRightEdge = x > frame.right - 32;
            svg.text(x, frame.bottom + 17, groupedNumber(event), "tick",
                nearRightEdge ? SvgWriter::Anchor::End : SvgWriter::Anchor::Middle);
        }
    }
    std::string axisTitle = "trace event (" + groupedNumber(series.eventCount) + " events";
    if (series.lastTimeUs > series.firstTimeUs)
        axisTitle += ", " + formatDurationUs(series.lastTimeUs - series.firstTimeUs);
    axisTitle += ")";
    svg.text((frame.left + frame.right) / 2, frame.height - 10, axisTitle, "axis-title", SvgWriter::Anchor::Middle);
}

// A single sample (no trace) still deserves a visible band: stretch it across the plot.
template <typename Point> std::vector<Point> stretched(std::vector<Point> points, int64_t eventCount)
{
    if (points.size() == 1) {
        points.push_back(points.front());
        points.back().event = std::max<int64_t>(1, eventCount - 1);
    }
    return points;
}

// One category's band between `below` and `below` + its bytes, as steps, as the app draws them: a
// state holds until the next sample, which may be far away when nothing changed in between.
std::vector<std::pair<double, double>> bandOutline(const ChartScale& scale,
    const std::vector<TimelineSeries::Point>& points, const std::vector<uint64_t>& below, int c)
{
    std::vector<std::pair<double, double>> outline;
    outline.reserve(points.size() * 4);
    for (size_t i = 0; i < points.size(); ++i) {
        const double x = scale.xOfEvent(points[i].event);
        if (i > 0)
            outline.emplace_back(x, outline.back().second);
        outline.emplace_back(x, scale.yOf(below[i] + points[i].bytes[static_cast<size_t>(c)]));
    }
    for (size_t i = points.size(); i-- > 0;) {
        outline.emplace_back(scale.xOfEvent(points[i].event), scale.yOf(below[i]));
        if (i > 0)
            outline.emplace_back(scale.xOfEvent(points[i].event), scale.yOf(below[i - 1]));
    }
    return outline;
}

void drawCategoryBands(SvgWriter& svg, const ChartScale& scale, const std::vector<TimelineSeries::Point>& points)
{
    std::vector<uint64_t> below(points.size(), 0);
    for (int c = 0; c < categoryCount; ++c) {
        uint64_t bandMax = 0;
        for (const TimelineSeries::Point& point : points)
            bandMax = std::max(bandMax, point.bytes[static_cast<size_t>(c)]);
        if (bandMax == 0)
            continue;
        const auto category = static_cast<Category>(c);
        svg.polygon(bandOutline(scale, points, below, c), "band " + categoryClass(category),
            std::string(categoryLabel(category)) + ": up to " + formatBytes(bandMax));
        for (size_t i = 0; i < points.size(); ++i)
            below[i] += points[i].bytes[static_cast<size_t>(c)];
    }
}

// The rest of the card over reserved points [first, last): its top edge, then the reserved line back.
std::vector<std::pair<double, double>> restOfCardOutline(const ChartScale& scale,
    const std::vector<TimelineSeries::ReservedPoint>& reserved, const CardTimelineBand& band, size_t first, size_t last)
{
    std::vector<std::pair<double, double>> outline;
    outline.reserve((last - first) * 4);
    for (size_t i = first; i < last; ++i) {
        const double x = scale.xOfEvent(reserved[i].event);
        if (!outline.empty())
            outline.emplace_back(x, outline.back().second);
        outline.emplace_back(x, scale.yOf(reserved[i].bytes + *band.outsideAt(reserved[i].event)));
    }
    for (size_t i = last; i-- > first;) {
        outline.emplace_back(scale.xOfEvent(reserved[i].event), scale.yOf(reserved[i].bytes));
        if (i > first)
            outline.emplace_back(scale.xOfEvent(reserved[i].event), scale.yOf(reserved[i - 1].bytes));
    }
    return outline;
}

// Stacked on the reserved steps, one polygon per run of points where the band's height is known.
void drawRestOfCard(SvgWriter& svg, const ChartScale& scale, const std::vector<TimelineSeries::ReservedPoint>& reserved,
    const CardTimelineBand* restOfCard)
{
    if (!restOfCard || restOfCard->maxOutside() == 0 || reserved.empty())
        return;
    const std::string title = restOfCard->label.empty() ? "outside PyTorch's allocator" : restOfCard->label;
    size_t first = 0;
    while (first < reserved.size()) {
        size_t last = first;
        while (last < reserved.size() && restOfCard->outsideAt(reserved[last].event))
            ++last;
        if (last - first >= 2)
            svg.polygon(restOfCardOutline(scale, reserved, *restOfCard, first, last), "rest-of-card", title);
        first = std::max(last, first + 1);
    }
}

void drawReservedLine(SvgWriter& svg, const ChartScale& scale,
    const std::vector<TimelineSeries::ReservedPoint>& reserved, uint64_t maxReserved)
{
    if (maxReserved == 0)
        return;
    std::vector<std::pair<double, double>> reservedLine;
    reservedLine.reserve(reserved.size() * 2);
    for (const TimelineSeries::ReservedPoint& point : reserved) {
        if (!reservedLine.empty())
            reservedLine.emplace_back(scale.xOfEvent(point.event), reservedLine.back().second);
        reservedLine.emplace_back(scale.xOfEvent(point.event), scale.yOf(point.bytes));
    }
    svg.beginGroup("reserved", "reserved by the caching allocator: up to " + formatBytes(maxReserved));
    svg.polyline(reservedLine, "reserved-line");
    svg.endGroup();
}

void drawSpans(SvgWriter& svg, const ChartScale& scale, const TimelineChartData& series)
{
    for (const ChartSpan& span : series.spans) {
        const double left = scale.xOfEvent(span.firstEvent);
        const double right = std::max(left + 1, scale.xOfEvent(std::min(span.lastEvent + 1, series.eventCount - 1)));
        const double y = frame.top + 1 + spanRowHeight * span.depth;
        svg.rect(left, y, right - left, spanRowHeight - 2, span.closed ? "span-bar" : "span-bar open",
            span.label + ": events " + groupedNumber(span.firstEvent) + "–" + groupedNumber(span.lastEvent)
                + (span.closed ? "" : " (no end recorded)"));
        // 6 px per character is the chart font's width, near enough to keep labels inside bars.
        if (right - left > 6.0 * static_cast<double>(span.label.size()) + 6)
            svg.text(left + 3, y + spanRowHeight - 4, span.label, "span-label small");
    }
}

void drawCapacityAndMarkers(SvgWriter& svg, const ChartScale& scale, std::optional<uint64_t> capacityBytes,
    const std::vector<TimelineMarker>& markers)
{
    if (capacityBytes) {
        const double y = scale.yOf(*capacityBytes);
        svg.line(frame.left, y, frame.right, y, "capacity-line");
        // Left-aligned: the peak and OOM markers usually crowd the right edge.
        svg.text(frame.left + 4, y - 4, "GPU capacity " + formatBytes(*capacityBytes), "marker-label");
    }
    for (const TimelineMarker& marker : markers) {
        const double x = scale.eventCount > 1 ? scale.xOf(std::clamp<int64_t>(marker.event, 0, scale.eventCount - 1))
                                              : frame.right;
        svg.line(x, frame.top - 8, x, frame.bottom, marker.oom ? "marker oom-marker" : "marker peak-marker");
        const bool rightHalf = x > (frame.left + frame.right) / 2;
        svg.text(rightHalf ? x - 4 : x + 4, frame.top - 10 + (marker.oom ? 0 : 12), marker.label, "marker-label",
            rightHalf ? SvgWriter::Anchor::End : SvgWriter::Anchor::Start);
    }
}

} // namespace

std::string timelineSvg(const TimelineChartData& series, const std::vector<TimelineMarker>& markers,
    std::optional<uint64_t> capacityBytes, const CardTimelineBand* restOfCard)
{
    SvgWriter svg(frame.width, frame.height, "chart timeline", "Allocated memory by category over the trace");
    const uint64_t top = std::max({ series.maxAllocated,
        series.maxReserved + (restOfCard ? restOfCard->maxOutside() : 0), capacityBytes.value_or(0), uint64_t(1) });
    const ChartScale scale(series, top);
    drawPhases(svg, scale, series);
    drawByteGrid(svg, frame, scale.axis);
    drawEventAxis(svg, scale, series);
    const auto points = stretched(series.points, series.eventCount);
    const auto reserved = stretched(series.reserved, series.eventCount);
    drawCategoryBands(svg, scale, points);
    drawRestOfCard(svg, scale, reserved, restOfCard);
    drawReservedLine(svg, scale, reserved, series.maxReserved);
    drawSpans(svg, scale, series);
    drawCapacityAndMarkers(svg, scale, capacityBytes, markers);
    return svg.finish();
}

} // namespace oomlens::report
