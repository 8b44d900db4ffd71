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
constexpr size_t listedSites = 10; // new and vanished sites each

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

// Where a position on the shared axis and a level of allocated bytes land in the overlay's frame.
struct OverlayScale
{
    double axisEnd = 1.0;
    double top = 1.0; // bytes at the frame's top: the highest level and some room above it

    double x(double position) const
    {
        return frame.left + (frame.right - frame.left) * position / std::max(axisEnd, 1e-9);
    }
    double y(uint64_t bytes) const
    {
        return frame.bottom - (frame.bottom - frame.top) * static_cast<double>(bytes) / top;
    }
};

void byteGrid(SvgWriter& svg, const OverlayScale& scale)
{
    const uint64_t step = binaryByteStep(static_cast<uint64_t>(scale.top));
    for (uint64_t tick = 0; static_cast<double>(tick) <= scale.top; tick += step) {
        svg.line(frame.left, scale.y(tick), frame.right, scale.y(tick), "grid");
        svg.text(frame.left - 6, scale.y(tick) + 4, formatAxisBytes(tick), "tick", SvgWriter::Anchor::End);
    }
}

void stepAxis(SvgWriter& svg, const OverlayScale& scale, const Comparison& comparison)
{
    const ComparisonTimeline& timeline = comparison.timeline;
    // Real step numbers when both sides start at the same step, else offsets from each side's first.
    const bool sameSteps = timeline.firstStepA == timeline.firstStepB;
    const auto steps = static_cast<int64_t>(std::llround(timeline.axisEnd));
    const int64_t every = std::max<int64_t>(1, steps / 12);
    for (int64_t s = 0; s < steps; s += every) {
        const double x = scale.x(static_cast<double>(s));
        svg.line(x, frame.top, x, frame.bottom, "grid");
        svg.text(x + 3, frame.bottom + 14,
            sameSteps ? "step " + std::to_string(timeline.firstStepA + s) : "step +" + std::to_string(s), "tick");
    }
    svg.text((frame.left + frame.right) / 2, frame.bottom + 32,
        sameSteps ? std::string("steps aligned")
                  : "steps aligned: " + comparison.a.label + " from step " + std::to_string(timeline.firstStepA) + ", "
                + comparison.b.label + " from step " + std::to_string(timeline.firstStepB),
        "axis-title", SvgWriter::Anchor::Middle);
}

void timeAxis(SvgWriter& svg, const OverlayScale& scale)
{
    for (int percent = 0; percent <= 100; percent += 20)
        svg.text(scale.x(percent / 100.0), frame.bottom + 14, std::to_string(percent) + "%", "tick",
            SvgWriter::Anchor::Middle);
    svg.text((frame.left + frame.right) / 2, frame.bottom + 32, "time, from each run's first to last event",
        "axis-title", SvgWriter::Anchor::Middle);
}

// One side's band and line, cut where the side has no column (it stopped earlier: fewer steps).
void overlaySide(SvgWriter& svg, const OverlayScale& scale, const ComparisonTimeline& timeline, bool sideB)
{
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
        const double middle = scale.x((column.start + column.end) / 2);
        upper.emplace_back(middle, scale.y(levels.high));
        lower.emplace_back(middle, scale.y(levels.low));
        line.emplace_back(middle, scale.y(levels.high));
    }
    flush();
}

// Each side's band (lowest to highest per column, so the peak keeps its height) and its highest
// level as a line, A under B, on the shared axis.
std::string overlaySvg(const Comparison& comparison)
{
    const ComparisonTimeline& timeline = comparison.timeline;
    SvgWriter svg(frame.width, frame.height, "chart",
        "Allocated memory of " + comparison.a.label + " and " + comparison.b.label + " overlaid");
    const OverlayScale scale { timeline.axisEnd, static_cast<double>(std::max<uint64_t>(timeline.maxBytes, 1)) * 1.05 };
    byteGrid(svg, scale);
    if (timeline.stepAligned)
        stepAxis(svg, scale, comparison);
    else
        timeAxis(svg, scale);
    svg.line(frame.left, frame.bottom, frame.right, frame.bottom, "axis");
    overlaySide(svg, scale, timeline, false);
    overlaySide(svg, scale, timeline, true);
    return svg.finish();
}

// Which run each side is: "/runs/before.pickle (device 0)", "step 3 of /runs/train.pickle (device 0)".
void sideSources(HtmlWriter& html, const Comparison& comparison)
{
    const auto sideName = [](const ComparisonSide& side) {
        std::string name;
        if (!side.wholeTrace)
            name = side.label + (side.source.empty() ? std::string() : " of ");
        return name + side.source + " (device " + std::to_string(side.device) + ")";
    };
    html.raw("<ul>");
    html.element("li", "A: " + sideName(comparison.a));
    html.element("li", "B: " + sideName(comparison.b));
    html.raw("</ul>\n");
    html.element("p",
        comparison.windows ? "The rest of this report describes the run both windows come from."
                           : "The rest of this report describes B.",
        "note");
}

void bytesRow(HtmlWriter& html, std::string_view label, uint64_t a, uint64_t b)
{
    const int64_t delta = static_cast<int64_t>(b) - static_cast<int64_t>(a);
    html.raw("<tr>");
    html.element("th", label);
    html.element("td", formatBytes(a), "num");
    html.element("td", formatBytes(b), "num");
    html.element("td", formatBytesDelta(delta), deltaClass(delta));
    html.raw("</tr>\n");
}

void textRow(HtmlWriter& html, std::string_view label, const std::string& a, const std::string& b)
{
    html.raw("<tr>");
    html.element("th", label);
    html.element("td", a, "num");
    html.element("td", b, "num");
    html.element("td", "", "num");
    html.raw("</tr>\n");
}

// The two runs' headline figures side by side, with B − A where it is a number of bytes.
void figuresTable(HtmlWriter& html, const ComparisonSide& a, const ComparisonSide& b)
{
    html.raw("<table>\n<tr><th></th>");
    html.element("th", a.label, "num");
    html.element("th", b.label, "num");
    html.element("th", "B − A", "num");
    html.raw("</tr>\n");
    bytesRow(html, "Peak allocated", a.peak.allocatedBytes, b.peak.allocatedBytes);
    textRow(html, "Peak at", momentLabel(a.peak), momentLabel(b.peak));
    bytesRow(html, "Peak reserved", a.peakReservedBytes, b.peakReservedBytes);
    textRow(html, "Out of memory", a.oom ? momentLabel(*a.oom) : "no", b.oom ? momentLabel(*b.oom) : "no");
    bytesRow(html, "Allocated in all", a.totalAllocatedBytes, b.totalAllocatedBytes);
    textRow(html, "Steps", std::to_string(a.stepCount), std::to_string(b.stepCount));
    html.raw("</table>\n");
}

// A category's row: its bytes at each peak and the change, at the OOM too where both have one.
void categoryRow(HtmlWriter& html, const Comparison& comparison, Category category)
{
    const auto i = static_cast<size_t>(category);
    html.raw("<tr>");
    parts::categoryCell(html, category);
    html.element("td", formatBytes(comparison.a.peak.categories[i]), "num");
    html.element("td", formatBytes(comparison.b.peak.categories[i]), "num");
    html.element(
        "td", formatBytesDelta(comparison.categoriesDeltaAtPeak[i]), deltaClass(comparison.categoriesDeltaAtPeak[i]));
    if (comparison.categoriesDeltaAtOom) {
        const int64_t delta = (*comparison.categoriesDeltaAtOom)[i];
        html.element("td", formatBytesDelta(delta), deltaClass(delta));
    }
    html.raw("</tr>\n");
}

// The categories either side holds at its peak (or that changed at the OOM).
void categoryTable(HtmlWriter& html, const Comparison& comparison)
{
    html.raw("<h3>By category</h3>\n<table>\n<tr><th>category</th>");
    for (const char* heading : { "A at the peak", "B at the peak", "B − A" })
        html.element("th", heading, "num");
    if (comparison.categoriesDeltaAtOom)
        html.element("th", "B − A at the OOM", "num");
    html.raw("</tr>\n");
    for (int c = 0; c < categoryCount; ++c) {
        const auto i = static_cast<size_t>(c);
        const bool atOom = comparison.categoriesDeltaAtOom && (*comparison.categoriesDeltaAtOom)[i] != 0;
        if (comparison.a.peak.categories[i] == 0 && comparison.b.peak.categories[i] == 0 && !atOom)
            continue;
        categoryRow(html, comparison, static_cast<Category>(c));
    }
    html.raw("</table>\n");
    if (comparison.categoriesDeltaAtOom && !(comparison.a.oom && comparison.b.oom))
        html.element("p", "A run without an OOM is compared at its peak, the nearest it came.", "note");
}

void overlayFigure(HtmlWriter& html, const Comparison& comparison)
{
    html.raw("<h3>Allocated over time, overlaid</h3>\n<div class=\"figure\">\n");
    html.svg(overlaySvg(comparison));
    html.raw("\n<div class=\"legend\">");
    html.legendEntry("compare-a", comparison.a.label);
    html.legendEntry("compare-b", comparison.b.label);
    html.raw("<span>bands: lowest to highest per column; lines: highest</span></div>\n</div>\n");
}

// A site's innermost frame, its whole stack unfolding under it where it has more than one.
void siteCell(HtmlWriter& html, const SiteKey& key)
{
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
}

// The site's category, phase and stack: the last three cells of every sites table.
void siteKeyCells(HtmlWriter& html, const SiteKey& key)
{
    html.element("td", categoryLabel(key.category));
    html.element("td", phaseLabel(key.phase));
    siteCell(html, key);
}

void changedSites(HtmlWriter& html, const Comparison& comparison, size_t topAllocations)
{
    const size_t shown = std::min(topAllocations, comparison.sites.size());
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
    for (size_t i = 0; i < shown; ++i) {
        const ComparedSite& site = comparison.sites[i];
        html.raw("<tr>");
        html.element("td", formatBytesDelta(site.peakDelta()), deltaClass(site.peakDelta()));
        html.element("td", formatBytes(site.a.peakBytes), "num");
        html.element("td", formatBytes(site.b.peakBytes), "num");
        html.element("td", formatBytesDelta(site.allocatedDelta()), "num");
        siteKeyCells(html, site.key);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

// The sites only one side has (new in B, vanished from B), with that side's figures.
void siteList(HtmlWriter& html, const std::string& heading, const std::vector<const ComparedSite*>& sites, bool sideB)
{
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
        siteKeyCells(html, sites[i]->key);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

// Two windows of one run: what A's window allocated and B's window still holds, by site.
void survivingSites(HtmlWriter& html, const Comparison& comparison, size_t topAllocations)
{
    html.raw("<h3>");
    html.text("Still alive after " + comparison.b.label + " of what " + comparison.a.label
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
    for (size_t i = 0; i < std::min(topAllocations, comparison.surviving.size()); ++i) {
        const SurvivingSite& site = comparison.surviving[i];
        html.raw("<tr>");
        html.element("td", formatBytes(site.bytes), "num");
        html.element("td", std::to_string(site.count), "num");
        html.element("td", site.repeats ? "yes" : "no");
        siteKeyCells(html, site.key);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

} // namespace

// The comparison section; written only when ReportOptions::comparison is set.
void comparison(HtmlWriter& html, const ReportContext& context)
{
    if (!context.options.comparison)
        return;
    const Comparison& comparison = *context.options.comparison;
    html.beginSection("comparison", "Comparison: " + comparison.a.label + " and " + comparison.b.label);
    html.element("p", comparison.summary, "summary");
    sideSources(html, comparison);
    figuresTable(html, comparison.a, comparison.b);
    categoryTable(html, comparison);
    overlayFigure(html, comparison);
    changedSites(html, comparison, context.options.topAllocations);
    siteList(html, "New in " + comparison.b.label, comparison.newSites(), true);
    siteList(html, "Vanished from " + comparison.b.label, comparison.vanishedSites(), false);
    if (comparison.windows)
        survivingSites(html, comparison, context.options.topAllocations);
    html.endSection();
}

} // namespace oomlens::report::sections
