
#include "core/presentation/labels.h"
#include "core/profilercomparison.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::report::sections {

namespace {

uint64_t clampedTotal(const ProfilerTimeline::Point& point)
{
    return static_cast<uint64_t>(std::max<int64_t>(point.total(), 0));
}

// The profiler's points as the timeline chart reads them: x is the point's index, and per column
// the lowest and the highest moment, so the peak keeps its true height.
TimelineChartData profilerChartData(const ProfilerTimeline& timeline, size_t buckets)
{
    TimelineChartData chart;
    chart.eventCount = static_cast<int64_t>(timeline.points.size());
    chart.firstTimeUs = timeline.firstTimeUs();
    chart.lastTimeUs = timeline.lastTimeUs();
    const size_t count = timeline.points.size();
    const size_t perBucket = std::max<size_t>(1, (count + buckets - 1) / std::max<size_t>(1, buckets));
    auto pointAt = [&](size_t i) {
        TimelineSeries::Point point;
        point.event = static_cast<int64_t>(i);
        point.bytes = toOomlensCategories(timeline.points[i].bytes);
        return point;
    };
    for (size_t begin = 0; begin < count; begin += perBucket) {
        const size_t end = std::min(count, begin + perBucket);
        size_t low = begin, high = begin;
        for (size_t i = begin; i < end; ++i) {
            if (clampedTotal(timeline.points[i]) < clampedTotal(timeline.points[low]))
                low = i;
            if (clampedTotal(timeline.points[i]) > clampedTotal(timeline.points[high]))
                high = i;
        }
        chart.points.push_back(pointAt(std::min(low, high)));
        if (low != high)
            chart.points.push_back(pointAt(std::max(low, high)));
        chart.maxAllocated = std::max(chart.maxAllocated, clampedTotal(timeline.points[high]));
    }
    if (count > 0 && chart.points.back().event != static_cast<int64_t>(count - 1))
        chart.points.push_back(pointAt(count - 1));
    return chart;
}

std::string profilerName(ProfilerCategory category)
{
    return std::string(profilerCategoryName(category));
}

// What the profiler recorded: how many events over how long, and the peak and when.
std::string recordingSummary(const ProfilerTimeline& timeline, const ProfilerTimeline::Point& peak)
{
    return "torch.profiler (" + std::string(profilerTimelineFormatName(timeline.format)) + " export) recorded "
        + groupedNumber(static_cast<int64_t>(timeline.events)) + " memory events over "
        + formatDurationUs(timeline.lastTimeUs() - timeline.firstTimeUs()) + "; at most "
        + formatBytes(clampedTotal(peak)) + " were live, " + formatDurationUs(peak.timeUs - timeline.firstTimeUs())
        + " after its first event."
        + (timeline.preexistingBytes > 0 ? " " + formatBytes(static_cast<uint64_t>(timeline.preexistingBytes))
                    + " existed before profiling began."
                                         : std::string());
}

void timelineFigure(HtmlWriter& html, const ReportContext& context, const ProfilerTimeline& timeline,
    const ProfilerTimeline::Point& peak)
{
    const auto peakIndex = static_cast<int64_t>(&peak - timeline.points.data());
    html.raw("<div class=\"figure\">\n");
    // Fewer columns than a snapshot's timeline: the profiler's points are already one per time.
    html.svg(timelineSvg(profilerChartData(timeline, std::min<size_t>(context.options.timelineBuckets, 400)),
        { { peakIndex, "peak " + formatBytes(clampedTotal(peak)), false } }, std::nullopt));
    html.raw("\n<div class=\"legend\">");
    // PyTorch's categories map to none of communication or kv_cache: listed only as the
    // snapshot legends list them, when empty too.
    parts::categoryLegend(html, [](Category) { return false; });
    html.raw("</div></div>\n");
}

// PyTorch's categories at the peak, and ours each is drawn as.
void peakCategories(HtmlWriter& html, const ProfilerTimeline::Point& peak)
{
    html.raw("<table class=\"profiler-categories\">\n<tr><th>PyTorch's category</th><th>At the peak</th>"
             "<th>Shown as</th></tr>\n");
    for (int p = 0; p < profilerCategoryCount; ++p) {
        const auto category = static_cast<ProfilerCategory>(p);
        html.raw("<tr>");
        html.element("td", profilerName(category));
        html.element(
            "td", formatBytes(static_cast<uint64_t>(std::max<int64_t>(peak.bytes[static_cast<size_t>(p)], 0))));
        html.element("td", categoryLabel(oomlensCategory(category)));
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

// The profiler beside a snapshot of the same run: each category at each one's own peak.
void snapshotComparison(HtmlWriter& html, const ProfilerComparison& comparison)
{
    html.element("p",
        "Beside the snapshot of device " + std::to_string(comparison.snapshotDevice)
            + ", each at its own peak: oomlens reads each allocation's stack, the profiler the autograd "
              "graph.");
    html.raw("<table class=\"profiler-comparison\">\n<tr><th>Category</th><th>Snapshot</th><th>Profiler</th>"
             "<th>PyTorch's categories</th></tr>\n");
    for (const ProfilerComparisonRow& row : comparison.rows) {
        std::string sources;
        for (ProfilerCategory source : row.profilerSources)
            sources += (sources.empty() ? "" : ", ") + profilerName(source);
        html.raw("<tr>");
        html.element("td", categoryLabel(row.category));
        html.element("td", formatBytes(row.snapshotBytes));
        html.element("td", formatBytes(row.profilerBytes));
        html.element("td", sources);
        html.raw("</tr>\n");
    }
    html.raw("<tr>");
    html.element("th", "Total");
    html.element("td", formatBytes(comparison.snapshotPeakBytes));
    html.element("td", formatBytes(comparison.profilerPeakBytes));
    html.element("td", "");
    html.raw("</tr>\n</table>\n");
}

} // namespace

// torch.profiler's memory timelines: PyTorch's categorisation over time, drawn in ours (the
// mapping in core/profilertimeline.h), PyTorch's names at the peak, and beside a snapshot of the
// same run the two categorisations side by side.
void profilerTimelines(HtmlWriter& html, const ReportContext& context)
{
    if (context.input.profilerTimelines.empty())
        return;
    html.beginSection("profiler", "torch.profiler memory timeline");
    const std::vector<ProfilerComparison> comparisons = compareProfilerWithSnapshots(context.input, context.analysis);
    for (size_t t = 0; t < context.input.profilerTimelines.size(); ++t) {
        const ProfilerTimeline& timeline = context.input.profilerTimelines[t];
        const ProfilerTimeline::Point* peak = timeline.peak();
        if (!peak)
            continue;
        std::string heading = timeline.path;
        if (timeline.device)
            heading += " · " + *timeline.device;
        html.element("h3", heading);
        html.element("p", recordingSummary(timeline, *peak));
        for (const std::string& warning : timeline.warnings)
            html.element("p", warning, "note");
        timelineFigure(html, context, timeline, *peak);
        peakCategories(html, *peak);
        for (const ProfilerComparison& comparison : comparisons) {
            if (comparison.timelineIndex == t)
                snapshotComparison(html, comparison);
        }
    }
    html.endSection();
}

} // namespace oomlens::report::sections
