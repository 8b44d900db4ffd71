#include "core/presentation/labels.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/units.h"

namespace oomlens::report::sections {

// The stacked timeline of one device with its peak and OOM markers, the rest of the card on top of
// reserved where an input measured it on this device, and its legend.
void timeline(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const DeviceAnalysis& device = *shown.device;
    const TimelineSeries curves(device);
    const TimelineChartData series = timelineChartData(device, curves, context.options.timelineBuckets);
    std::vector<TimelineMarker> markers;
    if (device.peakAllocatedBytes > 0)
        markers.push_back({ device.peakEvent, "peak " + formatBytes(device.peakAllocatedBytes), false });
    for (const OomAnalysis& oom : device.ooms)
        markers.push_back({ oom.eventIndex, "OOM: " + formatBytes(oom.requestedBytes) + " requested", true });
    // The rest of the card (context, libraries, other processes) on top of reserved, when an
    // input gives the card's total and this is its device.
    const CardTimelineBand* card = context.analysis.cardBandOn(shown.index, device.device);
    html.raw("<div class=\"figure\">\n");
    html.svg(
        timelineSvg(series, markers, card ? std::optional<uint64_t>(card->totalBytes) : context.capacityBytes, card));
    html.raw("\n<div class=\"legend\">");
    parts::categoryLegend(html, [&curves](Category category) { return curves.holds(category); });
    html.legendEntry("reserved", "reserved");
    html.raw(" ");
    if (card) {
        html.legendEntry("rest-of-card", card->label);
        html.raw(" ");
    }
    for (int p = 1; p < phaseCount; ++p) {
        const auto phase = static_cast<Phase>(p);
        bool present = false;
        for (const ChartPhaseRun& run : series.phases)
            present = present || run.phase == phase;
        if (!present)
            continue;
        html.legendEntry("phase-" + std::string(phaseName(phase)), std::string(phaseLabel(phase)) + " phase");
        html.raw(" ");
    }
    html.raw("</div>\n");
    std::string note = "Live requested bytes by category after each trace event, reduced to "
        + std::to_string(series.points.size())
        + " samples keeping each bucket's lowest and highest moment, so the peak is drawn at its true height.";
    if (device.initialAllocatedBytes > 0)
        note += " The curve starts at " + formatBytes(device.initialAllocatedBytes)
            + ": memory older than the trace, already live at its first entry (its moment is unknown).";
    html.element("p", note, "note");
    html.raw("</div>\n");
}

} // namespace oomlens::report::sections
