
#include "core/analysis/pinnedhostmemory.h"
#include "core/report/chartframe.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::report::sections {

namespace {

// Reserved as a stepped line and allocated as a stepped area over the host trace's time, at
// most about `columns` steps: per column the highest moment, so the peak keeps its height.
std::string pinnedHostSvg(const PinnedHostTimeline& host, std::optional<int64_t> oomTimeUs, size_t columns)
{
    constexpr PlotFrame frame = frames::pinnedHost;
    const double left = frame.left, top = frame.top, height = frame.height;
    const double plotWidth = frame.plotWidth(), plotHeight = frame.plotHeight();
    // The host allocator's state holds after its last entry: the chart runs on to the GPU's OOM
    // when that came later.
    const int64_t first = host.firstTimeUs();
    const int64_t last = std::max(host.lastTimeUs(), oomTimeUs.value_or(host.lastTimeUs()));
    const int64_t span = std::max<int64_t>(1, last - first);
    const uint64_t topBytes = std::max<uint64_t>({ 1, host.peakReserved, host.peakAllocated });
    auto x = [&](int64_t timeUs) {
        return left + plotWidth * static_cast<double>(std::clamp<int64_t>(timeUs - first, 0, span)) / span;
    };
    auto y = [&](uint64_t bytes) { return top + plotHeight * (1.0 - static_cast<double>(bytes) / topBytes); };

    std::vector<PinnedHostTimeline::Point> steps;
    const int64_t columnUs = std::max<int64_t>(1, span / static_cast<int64_t>(std::max<size_t>(1, columns)));
    for (size_t i = 1; i < host.points.size(); ++i) {
        const auto& point = host.points[i];
        if (!steps.empty() && (point.timeUs - first) / columnUs == (steps.back().timeUs - first) / columnUs) {
            steps.back().allocated = std::max(steps.back().allocated, point.allocated);
            steps.back().reserved = std::max(steps.back().reserved, point.reserved);
            continue;
        }
        steps.push_back(point);
    }
    std::vector<std::pair<double, double>> area { { left, y(0) }, { left, y(host.points.front().allocated) } };
    std::vector<std::pair<double, double>> line { { left, y(host.points.front().reserved) } };
    for (const auto& step : steps) {
        area.emplace_back(x(step.timeUs), area.back().second);
        area.emplace_back(x(step.timeUs), y(step.allocated));
        line.emplace_back(x(step.timeUs), line.back().second);
        line.emplace_back(x(step.timeUs), y(step.reserved));
    }
    area.emplace_back(left + plotWidth, area.back().second);
    area.emplace_back(left + plotWidth, y(0));
    line.emplace_back(left + plotWidth, line.back().second);

    SvgWriter svg(frame.width, height, "chart", "Pinned host memory over time");
    for (uint64_t tick : { uint64_t(0), topBytes / 2, topBytes }) {
        svg.line(left, y(tick), left + plotWidth, y(tick), "grid");
        svg.text(left - 6, y(tick) + 4, formatAxisBytes(tick), "tick", SvgWriter::Anchor::End);
    }
    svg.polygon(area, "host-allocated", "Pinned host memory handed out, peak " + formatBytes(host.peakAllocated));
    svg.polyline(line, "reserved-line");
    if (oomTimeUs && *oomTimeUs >= first) {
        svg.line(x(*oomTimeUs), top, x(*oomTimeUs), top + plotHeight, "marker oom-marker");
        // Near the right edge the label goes on the line's left, inside the chart.
        const bool nearRight = x(*oomTimeUs) > left + plotWidth * 0.8;
        svg.text(x(*oomTimeUs) + (nearRight ? -3 : 3), top + 10, "GPU OOM", "marker-label",
            nearRight ? SvgWriter::Anchor::End : SvgWriter::Anchor::Start);
    }
    svg.line(left, top + plotHeight, left + plotWidth, top + plotHeight, "axis");
    svg.text(left, height - 8, "0 s", "tick");
    svg.text(left + plotWidth, height - 8, formatDurationUs(span), "tick", SvgWriter::Anchor::End);
    return svg.finish();
}

} // namespace

// Pinned host memory (record_pinned_host_memory=True): host RAM, its own chart and figures, so
// that nobody reads it as part of the GPU's memory.
void pinnedHostMemory(HtmlWriter& html, const ShownSnapshot& shown)
{
    if (!shown.analysis->snapshot)
        return;
    const SnapshotAnalysis& analysis = *shown.analysis;
    const auto host = pinnedHostTimeline(*analysis.snapshot);
    if (!host)
        return;
    html.raw("<h3 id=\"pinned-host-");
    html.text(std::to_string(shown.index));
    html.raw("\">Pinned host memory</h3>\n");
    std::string facts = "PyTorch's pinned host allocator (pin_memory=True, DataLoader's pinning thread, non_blocking "
                        "copies) held "
        + formatBytes(host->reservedAtDump) + " of host RAM in " + std::to_string(host->segmentsAtDump)
        + (host->segmentsAtDump == 1 ? " segment" : " segments") + " at the dump, " + formatBytes(host->allocatedAtDump)
        + " of it handed out";
    if (host->hasTrace())
        facts += "; at most " + formatBytes(host->peakReserved) + " pinned and " + formatBytes(host->peakAllocated)
            + " handed out over its " + groupedNumber(static_cast<int64_t>(host->points.size() - 1)) + " trace events";
    facts += ". This is host RAM: none of it counts toward the GPU's reserved or allocated memory above.";
    html.element("p", facts);
    const DeviceAnalysis* device = analysis.primary();
    std::optional<int64_t> oomTime;
    if (device && !device->ooms.empty()) {
        oomTime = device->ooms.front().timeUs;
        if (const auto state = host->at(*oomTime))
            html.element("p",
                "At the GPU's OOM the host allocator held " + formatBytes(state->reserved) + " pinned, "
                    + formatBytes(state->allocated) + " of it handed out.");
    }
    if (host->hasTrace()) {
        html.raw("\n<div class=\"figure\">");
        html.svg(pinnedHostSvg(*host, oomTime, 240));
        html.raw("</div>\n<div class=\"legend\">");
        html.legendEntry("host-allocated", "handed out");
        html.legendEntry("reserved", "pinned (reserved)");
        html.raw("</div>\n");
    } else {
        html.element("p", "The snapshot has the host allocator's segments but no host trace events.", "note");
    }
    if (host->olderAllocated > 0)
        html.element("p",
            formatBytes(host->olderAllocated)
                + " of pinned memory was handed out before the host trace began (its ring buffer wrapped, or "
                  "recording started late).",
            "note");
    html.raw("\n");
}

} // namespace oomlens::report::sections
