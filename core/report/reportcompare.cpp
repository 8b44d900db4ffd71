#include "core/compare/comparison.h"
#include "core/presentation/labels.h"
#include "core/report/chartframe.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>

namespace oomlens::report::sections {

namespace {

constexpr const PlotFrame& frame = frames::compareOverlay;
constexpr double plotLeft = frame.left;
constexpr double plotRight = frame.right;
constexpr double plotTop = frame.top;
constexpr double plotBottom = frame.bottom;
constexpr size_t listedSites = 10; // new and vanished sites each

std::string signedBytes(int64_t bytes)
{
    return bytes == 0 ? std::string("0") : formatSignedBytes(bytes);
}

std::string_view deltaClass(int64_t bytes)
{
    if (bytes > 0)
        return "num grew";
    return bytes < 0 ? "num shrank" : "num";
}

std::string momentLabel(const ComparedMoment& moment)
{
    std::string text(phaseLabel(moment.phase));
    if (moment.step >= 0)
        text += ", step " + std::to_string(moment.step);
    return text;
}

// Each side's band (lowest to highest per column, so the peak keeps its height) and its highest
// level as a line, A under B, on the shared axis.
std::string overlaySvg(const Comparison& comparison)
{
    const ComparisonTimeline& timeline = comparison.timeline;
    SvgWriter svg(frame.width, frame.height, "chart",
        "Allocated memory of " + comparison.a.label + " and " + comparison.b.label + " overlaid");
    const double top = static_cast<double>(std::max<uint64_t>(timeline.maxBytes, 1)) * 1.05;
    const auto x = [&](double position) {
        return plotLeft + (plotRight - plotLeft) * position / std::max(timeline.axisEnd, 1e-9);
    };
    const auto y
        = [&](uint64_t bytes) { return plotBottom - (plotBottom - plotTop) * static_cast<double>(bytes) / top; };

    const uint64_t step = binaryByteStep(static_cast<uint64_t>(top));
    for (uint64_t tick = 0; static_cast<double>(tick) <= top; tick += step) {
        svg.line(plotLeft, y(tick), plotRight, y(tick), "grid");
        svg.text(plotLeft - 6, y(tick) + 4, formatAxisBytes(tick), "tick", SvgWriter::Anchor::End);
    }
    if (timeline.stepAligned) {
        // Real step numbers when both sides start at the same step, else offsets from each side's first.
        const bool sameSteps = timeline.firstStepA == timeline.firstStepB;
        const auto steps = static_cast<int64_t>(std::llround(timeline.axisEnd));
        const int64_t every = std::max<int64_t>(1, steps / 12);
        for (int64_t s = 0; s < steps; s += every) {
            svg.line(x(static_cast<double>(s)), plotTop, x(static_cast<double>(s)), plotBottom, "grid");
            svg.text(x(static_cast<double>(s)) + 3, plotBottom + 14,
                sameSteps ? "step " + std::to_string(timeline.firstStepA + s) : "step +" + std::to_string(s), "tick");
        }
        svg.text((plotLeft + plotRight) / 2, plotBottom + 32,
            sameSteps ? std::string("steps aligned")
                      : "steps aligned: " + comparison.a.label + " from step " + std::to_string(timeline.firstStepA)
                    + ", " + comparison.b.label + " from step " + std::to_string(timeline.firstStepB),
            "axis-title", SvgWriter::Anchor::Middle);
    } else {
        for (int percent = 0; percent <= 100; percent += 20) {
            svg.text(
                x(percent / 100.0), plotBottom + 14, std::to_string(percent) + "%", "tick", SvgWriter::Anchor::Middle);
        }
        svg.text((plotLeft + plotRight) / 2, plotBottom + 32, "time, from each run's first to last event", "axis-title",
            SvgWriter::Anchor::Middle);
    }
    svg.line(plotLeft, plotBottom, plotRight, plotBottom, "axis");

    const auto drawSide = [&](bool sideB) {
        // A side may stop earlier (fewer steps): its band and line stop there too.
        std::vector<std::pair<double, double>> upper, lower, line;
        const auto flush = [&] {
            if (upper.empty())
                return;
            std::vector<std::pair<double, double>> band = upper;
            band.insert(band.end(), lower.rbegin(), lower.rend());
            svg.polygon(band, sideB ? "compare-b-band" : "compare-a-band");
            svg.polyline(line, sideB ? "compare-b-line" : "compare-a-line");
            upper.clear();
            lower.clear();
            line.clear();
        };
        for (const OverlayColumn& column : timeline.columns) {
            const OverlayLevels& levels = sideB ? column.b : column.a;
            if (!levels.present) {
                flush();
                continue;
            }
            const double middle = x((column.start + column.end) / 2);
            upper.emplace_back(middle, y(levels.high));
            lower.emplace_back(middle, y(levels.low));
            line.emplace_back(middle, y(levels.high));
        }
        flush();
    };
    drawSide(false);
    drawSide(true);
    return svg.finish();
}

} // namespace

// The comparison section; written only when ReportOptions::comparison is set.
void comparison(HtmlWriter& html, const ReportContext& context)
{
    if (!context.options.comparison)
        return;
    const Comparison& comparison = *context.options.comparison;
    const ComparisonSide& a = comparison.a;
    const ComparisonSide& b = comparison.b;
    html.beginSection("comparison", "Comparison: " + a.label + " and " + b.label);
    html.element("p", comparison.summary, "summary");
    // "/runs/before.pickle (device 0)", "step 3 of /runs/train.pickle (device 0)"
    const auto sideName = [](const ComparisonSide& side) {
        std::string name;
        if (!side.wholeTrace)
            name = side.label + (side.source.empty() ? std::string() : " of ");
        return name + side.source + " (device " + std::to_string(side.device) + ")";
    };
    html.raw("<ul>");
    html.element("li", "A: " + sideName(a));
    html.element("li", "B: " + sideName(b));
    html.raw("</ul>\n");
    html.element("p",
        comparison.windows ? "The rest of this report describes the run both windows come from."
                           : "The rest of this report describes B.",
        "note");

    html.raw("<table>\n<tr><th></th>");
    html.element("th", a.label, "num");
    html.element("th", b.label, "num");
    html.element("th", "B − A", "num");
    html.raw("</tr>\n");
    const auto bytesRow = [&](std::string_view label, uint64_t x, uint64_t y) {
        const int64_t delta = static_cast<int64_t>(y) - static_cast<int64_t>(x);
        html.raw("<tr>");
        html.element("th", label);
        html.element("td", formatBytes(x), "num");
        html.element("td", formatBytes(y), "num");
        html.element("td", signedBytes(delta), deltaClass(delta));
        html.raw("</tr>\n");
    };
    const auto textRow = [&](std::string_view label, const std::string& x, const std::string& y) {
        html.raw("<tr>");
        html.element("th", label);
        html.element("td", x, "num");
        html.element("td", y, "num");
        html.element("td", "", "num");
        html.raw("</tr>\n");
    };
    bytesRow("Peak allocated", a.peak.allocatedBytes, b.peak.allocatedBytes);
    textRow("Peak at", momentLabel(a.peak), momentLabel(b.peak));
    bytesRow("Peak reserved", a.peakReservedBytes, b.peakReservedBytes);
    textRow("Out of memory", a.oom ? momentLabel(*a.oom) : "no", b.oom ? momentLabel(*b.oom) : "no");
    bytesRow("Allocated in all", a.totalAllocatedBytes, b.totalAllocatedBytes);
    textRow("Steps", std::to_string(a.stepCount), std::to_string(b.stepCount));
    html.raw("</table>\n");

    html.raw("<h3>By category</h3>\n<table>\n<tr><th>category</th>");
    for (const char* heading : { "A at the peak", "B at the peak", "B − A" })
        html.element("th", heading, "num");
    if (comparison.categoriesDeltaAtOom)
        html.element("th", "B − A at the OOM", "num");
    html.raw("</tr>\n");
    for (int c = 0; c < categoryCount; ++c) {
        const auto i = static_cast<size_t>(c);
        const auto category = static_cast<Category>(c);
        const bool atOom = comparison.categoriesDeltaAtOom && (*comparison.categoriesDeltaAtOom)[i] != 0;
        if (a.peak.categories[i] == 0 && b.peak.categories[i] == 0 && !atOom)
            continue;
        html.raw("<tr>");
        parts::categoryCell(html, category);
        html.element("td", formatBytes(a.peak.categories[i]), "num");
        html.element("td", formatBytes(b.peak.categories[i]), "num");
        html.element(
            "td", signedBytes(comparison.categoriesDeltaAtPeak[i]), deltaClass(comparison.categoriesDeltaAtPeak[i]));
        if (comparison.categoriesDeltaAtOom) {
            const int64_t delta = (*comparison.categoriesDeltaAtOom)[i];
            html.element("td", signedBytes(delta), deltaClass(delta));
        }
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
    if (comparison.categoriesDeltaAtOom && !(a.oom && b.oom))
        html.element("p", "A run without an OOM is compared at its peak, the nearest it came.", "note");

    html.raw("<h3>Allocated over time, overlaid</h3>\n<div class=\"figure\">\n");
    html.svg(overlaySvg(comparison));
    html.raw("\n<div class=\"legend\">");
    html.legendEntry("compare-a", a.label);
    html.legendEntry("compare-b", b.label);
    html.raw("<span>bands: lowest to highest per column; lines: highest</span></div>\n</div>\n");

    const size_t shown = std::min(context.options.topAllocations, comparison.sites.size());
    html.raw("<h3>Sites that changed most at the peak</h3>\n");
    html.element("p",
        "Allocation sites matched by the user's frames of the stack, category and phase, never by address; "
            + std::to_string(shown) + " of " + std::to_string(comparison.sites.size()) + ".",
        "note");
    html.raw("<table>\n<tr>");
    for (const char* heading : { "B − A", "A", "B", "allocated in all, B − A" })
        html.element("th", heading, "num");
    for (const char* heading : { "category", "phase", "site" })
        html.element("th", heading);
    html.raw("</tr>\n");
    const auto siteCell = [&](const SiteKey& key) {
        html.raw("<td>");
        if (key.frames.size() <= 1) {
            html.text(siteLabel(key));
        } else {
            html.raw("<details><summary>");
            html.text(siteLabel(key));
            html.raw("</summary><pre><code>");
            for (const std::string& frame : key.frames)
                html.text(frame + "\n");
            html.raw("</code></pre></details>");
        }
        html.raw("</td>");
    };
    for (size_t i = 0; i < shown; ++i) {
        const ComparedSite& site = comparison.sites[i];
        html.raw("<tr>");
        html.element("td", signedBytes(site.peakDelta()), deltaClass(site.peakDelta()));
        html.element("td", formatBytes(site.a.peakBytes), "num");
        html.element("td", formatBytes(site.b.peakBytes), "num");
        html.element("td", signedBytes(site.allocatedDelta()), "num");
        html.element("td", categoryLabel(site.key.category));
        html.element("td", phaseLabel(site.key.phase));
        siteCell(site.key);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");

    const auto siteList = [&](const std::string& heading, const std::vector<const ComparedSite*>& sites, bool sideB) {
        html.raw("<h3>");
        html.text(heading + " (" + std::to_string(sites.size()) + ")");
        html.raw("</h3>\n");
        if (sites.empty()) {
            html.element("p", "None.", "note");
            return;
        }
        html.raw("<table>\n<tr>");
        html.element("th", "at the peak", "num");
        html.element("th", "allocated in all", "num");
        for (const char* column : { "category", "phase", "site" })
            html.element("th", column);
        html.raw("</tr>\n");
        for (size_t i = 0; i < std::min(listedSites, sites.size()); ++i) {
            const SiteFigures& figures = sideB ? sites[i]->b : sites[i]->a;
            html.raw("<tr>");
            html.element("td", formatBytes(figures.peakBytes), "num");
            html.element("td", formatBytes(figures.allocatedBytes), "num");
            html.element("td", categoryLabel(sites[i]->key.category));
            html.element("td", phaseLabel(sites[i]->key.phase));
            siteCell(sites[i]->key);
            html.raw("</tr>\n");
        }
        html.raw("</table>\n");
    };
    siteList("New in " + b.label, comparison.newSites(), true);
    siteList("Vanished from " + b.label, comparison.vanishedSites(), false);

    if (comparison.windows) {
        html.raw("<h3>");
        html.text("Still alive after " + b.label + " of what " + a.label
            + " allocated: " + formatBytes(comparison.survivingBytes));
        html.raw("</h3>\n");
        html.element("p",
            "A site that repeats left memory alive from both windows: it grows from window to window, the mark of a "
            "leak. A one-off (state made in the first step) does not repeat.",
            "note");
        html.raw("<table>\n<tr>");
        html.element("th", "bytes", "num");
        html.element("th", "blocks", "num");
        for (const char* column : { "repeats", "category", "phase", "site" })
            html.element("th", column);
        html.raw("</tr>\n");
        for (size_t i = 0; i < std::min(context.options.topAllocations, comparison.surviving.size()); ++i) {
            const SurvivingSite& site = comparison.surviving[i];
            html.raw("<tr>");
            html.element("td", formatBytes(site.bytes), "num");
            html.element("td", std::to_string(site.count), "num");
            html.element("td", site.repeats ? "yes" : "no");
            html.element("td", categoryLabel(site.key.category));
            html.element("td", phaseLabel(site.key.phase));
            siteCell(site.key);
            html.raw("</tr>\n");
        }
        html.raw("</table>\n");
    }
    html.endSection();
}

} // namespace oomlens::report::sections
