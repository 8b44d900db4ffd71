#include "core/compare/comparison.h"
#include "core/presentation/labels.h"
#include "core/report/charts.h"
#include "core/report/reportbuilder.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>

namespace oomlens::report {

namespace {

constexpr double chartWidth = 960;
constexpr double chartHeight = 300;
constexpr double plotLeft = 72;
constexpr double plotRight = 944;
constexpr double plotTop = 16;
constexpr double plotBottom = 262;
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

uint64_t niceByteStep(uint64_t maximum)
{
    uint64_t step = 1;
    while (maximum / step > 5)
        step *= 2;
    return step;
}

// Each side's band (lowest to highest per column, so the peak keeps its height) and its highest
// level as a line, A under B, on the shared axis.
std::string overlaySvg(const Comparison& comparison)
{
    const ComparisonTimeline& timeline = comparison.timeline;
    SvgWriter svg(chartWidth, chartHeight, "chart",
        "Allocated memory of " + comparison.a.label + " and " + comparison.b.label + " overlaid");
    const double top = static_cast<double>(std::max<uint64_t>(timeline.maxBytes, 1)) * 1.05;
    const auto x = [&](double position) {
        return plotLeft + (plotRight - plotLeft) * position / std::max(timeline.axisEnd, 1e-9);
    };
    const auto y
        = [&](uint64_t bytes) { return plotBottom - (plotBottom - plotTop) * static_cast<double>(bytes) / top; };

    const uint64_t step = niceByteStep(static_cast<uint64_t>(top));
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
void ReportBuilder::writeComparison()
{
    if (!m_options.comparison)
        return;
    const Comparison& comparison = *m_options.comparison;
    const ComparisonSide& a = comparison.a;
    const ComparisonSide& b = comparison.b;
    beginSection("comparison", "Comparison: " + a.label + " and " + b.label);
    element("p", comparison.summary, "summary");
    // "/runs/before.pickle (device 0)", "step 3 of /runs/train.pickle (device 0)"
    const auto sideName = [](const ComparisonSide& side) {
        std::string name;
        if (!side.wholeTrace)
            name = side.label + (side.source.empty() ? std::string() : " of ");
        return name + side.source + " (device " + std::to_string(side.device) + ")";
    };
    raw("<ul>");
    element("li", "A: " + sideName(a));
    element("li", "B: " + sideName(b));
    raw("</ul>\n");
    element("p",
        comparison.windows ? "The rest of this report describes the run both windows come from."
                           : "The rest of this report describes B.",
        "note");

    raw("<table>\n<tr><th></th>");
    element("th", a.label, "num");
    element("th", b.label, "num");
    element("th", "B − A", "num");
    raw("</tr>\n");
    const auto bytesRow = [&](std::string_view label, uint64_t x, uint64_t y) {
        const int64_t delta = static_cast<int64_t>(y) - static_cast<int64_t>(x);
        raw("<tr>");
        element("th", label);
        element("td", formatBytes(x), "num");
        element("td", formatBytes(y), "num");
        element("td", signedBytes(delta), deltaClass(delta));
        raw("</tr>\n");
    };
    const auto textRow = [&](std::string_view label, const std::string& x, const std::string& y) {
        raw("<tr>");
        element("th", label);
        element("td", x, "num");
        element("td", y, "num");
        element("td", "", "num");
        raw("</tr>\n");
    };
    bytesRow("Peak allocated", a.peak.allocatedBytes, b.peak.allocatedBytes);
    textRow("Peak at", momentLabel(a.peak), momentLabel(b.peak));
    bytesRow("Peak reserved", a.peakReservedBytes, b.peakReservedBytes);
    textRow("Out of memory", a.oom ? momentLabel(*a.oom) : "no", b.oom ? momentLabel(*b.oom) : "no");
    bytesRow("Allocated in all", a.totalAllocatedBytes, b.totalAllocatedBytes);
    textRow("Steps", std::to_string(a.stepCount), std::to_string(b.stepCount));
    raw("</table>\n");

    raw("<h3>By category</h3>\n<table>\n<tr><th>category</th>");
    for (const char* heading : { "A at the peak", "B at the peak", "B − A" })
        element("th", heading, "num");
    if (comparison.categoriesDeltaAtOom)
        element("th", "B − A at the OOM", "num");
    raw("</tr>\n");
    for (int c = 0; c < categoryCount; ++c) {
        const auto i = static_cast<size_t>(c);
        const auto category = static_cast<Category>(c);
        const bool atOom = comparison.categoriesDeltaAtOom && (*comparison.categoriesDeltaAtOom)[i] != 0;
        if (a.peak.categories[i] == 0 && b.peak.categories[i] == 0 && !atOom)
            continue;
        raw("<tr><td><span class=\"swatch ");
        raw(categoryClass(category));
        raw("\"></span>");
        text(categoryLabel(category));
        raw("</td>");
        element("td", formatBytes(a.peak.categories[i]), "num");
        element("td", formatBytes(b.peak.categories[i]), "num");
        element(
            "td", signedBytes(comparison.categoriesDeltaAtPeak[i]), deltaClass(comparison.categoriesDeltaAtPeak[i]));
        if (comparison.categoriesDeltaAtOom) {
            const int64_t delta = (*comparison.categoriesDeltaAtOom)[i];
            element("td", signedBytes(delta), deltaClass(delta));
        }
        raw("</tr>\n");
    }
    raw("</table>\n");
    if (comparison.categoriesDeltaAtOom && !(a.oom && b.oom))
        element("p", "A run without an OOM is compared at its peak, the nearest it came.", "note");

    raw("<h3>Allocated over time, overlaid</h3>\n<div class=\"figure\">\n");
    raw(overlaySvg(comparison));
    raw("\n<div class=\"legend\"><span><span class=\"swatch compare-a\"></span>");
    text(a.label);
    raw("</span><span><span class=\"swatch compare-b\"></span>");
    text(b.label);
    raw("</span><span>bands: lowest to highest per column; lines: highest</span></div>\n</div>\n");

    const size_t shown = std::min(m_options.topAllocations, comparison.sites.size());
    raw("<h3>Sites that changed most at the peak</h3>\n");
    element("p",
        "Allocation sites matched by the user's frames of the stack, category and phase, never by address; "
            + std::to_string(shown) + " of " + std::to_string(comparison.sites.size()) + ".",
        "note");
    raw("<table>\n<tr>");
    for (const char* heading : { "B − A", "A", "B", "allocated in all, B − A" })
        element("th", heading, "num");
    for (const char* heading : { "category", "phase", "site" })
        element("th", heading);
    raw("</tr>\n");
    const auto siteCell = [&](const SiteKey& key) {
        raw("<td>");
        if (key.frames.size() <= 1) {
            text(siteLabel(key));
        } else {
            raw("<details><summary>");
            text(siteLabel(key));
            raw("</summary><pre><code>");
            for (const std::string& frame : key.frames)
                text(frame + "\n");
            raw("</code></pre></details>");
        }
        raw("</td>");
    };
    for (size_t i = 0; i < shown; ++i) {
        const ComparedSite& site = comparison.sites[i];
        raw("<tr>");
        element("td", signedBytes(site.peakDelta()), deltaClass(site.peakDelta()));
        element("td", formatBytes(site.a.peakBytes), "num");
        element("td", formatBytes(site.b.peakBytes), "num");
        element("td", signedBytes(site.allocatedDelta()), "num");
        element("td", categoryLabel(site.key.category));
        element("td", phaseLabel(site.key.phase));
        siteCell(site.key);
        raw("</tr>\n");
    }
    raw("</table>\n");

    const auto siteList = [&](const std::string& heading, const std::vector<const ComparedSite*>& sites, bool sideB) {
        raw("<h3>");
        text(heading + " (" + std::to_string(sites.size()) + ")");
        raw("</h3>\n");
        if (sites.empty()) {
            element("p", "None.", "note");
            return;
        }
        raw("<table>\n<tr>");
        element("th", "at the peak", "num");
        element("th", "allocated in all", "num");
        for (const char* column : { "category", "phase", "site" })
            element("th", column);
        raw("</tr>\n");
        for (size_t i = 0; i < std::min(listedSites, sites.size()); ++i) {
            const SiteFigures& figures = sideB ? sites[i]->b : sites[i]->a;
            raw("<tr>");
            element("td", formatBytes(figures.peakBytes), "num");
            element("td", formatBytes(figures.allocatedBytes), "num");
            element("td", categoryLabel(sites[i]->key.category));
            element("td", phaseLabel(sites[i]->key.phase));
            siteCell(sites[i]->key);
            raw("</tr>\n");
        }
        raw("</table>\n");
    };
    siteList("New in " + b.label, comparison.newSites(), true);
    siteList("Vanished from " + b.label, comparison.vanishedSites(), false);

    if (comparison.windows) {
        raw("<h3>");
        text("Still alive after " + b.label + " of what " + a.label
            + " allocated: " + formatBytes(comparison.survivingBytes));
        raw("</h3>\n");
        element("p",
            "A site that repeats left memory alive from both windows: it grows from window to window, the mark of a "
            "leak. A one-off (state made in the first step) does not repeat.",
            "note");
        raw("<table>\n<tr>");
        element("th", "bytes", "num");
        element("th", "blocks", "num");
        for (const char* column : { "repeats", "category", "phase", "site" })
            element("th", column);
        raw("</tr>\n");
        for (size_t i = 0; i < std::min(m_options.topAllocations, comparison.surviving.size()); ++i) {
            const SurvivingSite& site = comparison.surviving[i];
            raw("<tr>");
            element("td", formatBytes(site.bytes), "num");
            element("td", std::to_string(site.count), "num");
            element("td", site.repeats ? "yes" : "no");
            element("td", categoryLabel(site.key.category));
            element("td", phaseLabel(site.key.phase));
            siteCell(site.key);
            raw("</tr>\n");
        }
        raw("</table>\n");
    }
    endSection();
}

} // namespace oomlens::report
