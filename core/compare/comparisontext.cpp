#include "core/compare/comparisontext.h"

#include "core/presentation/labels.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens {

namespace {

constexpr size_t labelWidth = 22;
constexpr size_t valueWidth = 26;

// A column `width` display columns wide, and at least one space before the next.
std::string pad(const std::string& text, size_t width)
{
    return padRight(text + " ", width);
}

std::string row(const std::string& label, const std::string& a, const std::string& b, const std::string& delta = {})
{
    std::string line = pad(label, labelWidth) + pad(a, valueWidth) + pad(b, valueWidth) + delta;
    while (!line.empty() && line.back() == ' ')
        line.pop_back();
    return line + '\n';
}

std::string moment(const ComparedMoment& m)
{
    std::string text(phaseLabel(m.phase));
    if (m.step >= 0)
        text += ", step " + std::to_string(m.step);
    return text;
}

// "/runs/before.pickle (device 0)", "step 3 of /runs/train.pickle (device 0)"
std::string sideTitle(const ComparisonSide& side)
{
    std::string title;
    if (!side.wholeTrace)
        title = side.label + (side.source.empty() ? std::string() : " of ");
    title += side.source;
    return title + " (device " + std::to_string(side.device) + ")";
}

void categoryTable(std::string& out, const std::string& heading, const CategoryBytes& a, const CategoryBytes& b,
    const CategoryDelta& delta)
{
    out += '\n' + row(heading, "A", "B", "B - A");
    for (int c = 0; c < categoryCount; ++c) {
        const auto i = static_cast<size_t>(c);
        if (a[i] == 0 && b[i] == 0)
            continue;
        out += row("  " + std::string(categoryLabel(static_cast<Category>(c))), formatBytes(a[i]), formatBytes(b[i]),
            formatBytesDelta(delta[i]));
    }
}

std::string siteLine(const ComparedSite& site)
{
    return "  " + pad(formatBytesDelta(site.peakDelta()), 13) + pad(formatBytes(site.a.peakBytes), 13)
        + pad(formatBytes(site.b.peakBytes), 13) + pad(formatBytesDelta(site.allocatedDelta()), 14)
        + pad(std::string(categoryLabel(site.key.category)) + ", " + std::string(phaseLabel(site.key.phase)), 28)
        + siteLabel(site.key) + '\n';
}

void siteList(std::string& out, const std::string& heading, const std::vector<const ComparedSite*>& sites, bool sideB,
    size_t limit)
{
    if (sites.empty())
        return;
    uint64_t peak = 0;
    uint64_t allocated = 0;
    for (const ComparedSite* site : sites) {
        const SiteFigures& figures = sideB ? site->b : site->a;
        peak += figures.peakBytes;
        allocated += figures.allocatedBytes;
    }
    out += '\n' + heading + " (" + std::to_string(sites.size()) + "): " + formatBytes(peak) + " at the peak, "
        + formatBytes(allocated) + " allocated in all\n";
    for (size_t i = 0; i < std::min(limit, sites.size()); ++i) {
        const SiteFigures& figures = sideB ? sites[i]->b : sites[i]->a;
        out += "  " + pad(formatBytes(figures.peakBytes), 13) + pad(formatBytes(figures.allocatedBytes), 13)
            + pad(std::string(categoryLabel(sites[i]->key.category)) + ", "
                    + std::string(phaseLabel(sites[i]->key.phase)),
                28)
            + siteLabel(sites[i]->key) + '\n';
    }
}

} // namespace

std::string comparisonToText(const Comparison& comparison, size_t topSites)
{
    const ComparisonSide& a = comparison.a;
    const ComparisonSide& b = comparison.b;
    std::string out = "A: " + sideTitle(a) + "\nB: " + sideTitle(b) + "\n\n";
    out += row("", "A", "B", "B - A");
    out += row("Peak allocated", formatBytes(a.peak.allocatedBytes), formatBytes(b.peak.allocatedBytes),
        formatBytesDelta(static_cast<int64_t>(b.peak.allocatedBytes) - static_cast<int64_t>(a.peak.allocatedBytes)));
    out += row("Peak at", moment(a.peak), moment(b.peak));
    out += row("Peak reserved", formatBytes(a.peakReservedBytes), formatBytes(b.peakReservedBytes),
        formatBytesDelta(static_cast<int64_t>(b.peakReservedBytes) - static_cast<int64_t>(a.peakReservedBytes)));
    out += row("Out of memory", a.oom ? moment(*a.oom) : "no", b.oom ? moment(*b.oom) : "no");
    out += row("Allocated in all", formatBytes(a.totalAllocatedBytes), formatBytes(b.totalAllocatedBytes),
        formatBytesDelta(static_cast<int64_t>(b.totalAllocatedBytes) - static_cast<int64_t>(a.totalAllocatedBytes)));
    out += row("Steps", std::to_string(a.stepCount), std::to_string(b.stepCount));

    categoryTable(out, "At the peak", a.peak.categories, b.peak.categories, comparison.categoriesDeltaAtPeak);
    if (comparison.categoriesDeltaAtOom) {
        categoryTable(out, a.oom && b.oom ? "At the OOM" : "At the OOM (or peak)",
            a.oom ? a.oom->categories : a.peak.categories, b.oom ? b.oom->categories : b.peak.categories,
            *comparison.categoriesDeltaAtOom);
    }

    const size_t shown = std::min(topSites, comparison.sites.size());
    out += "\nSites that changed most at the peak (" + std::to_string(shown) + " of "
        + std::to_string(comparison.sites.size())
        + "; matched by stack, category and phase; 'allocated': B - A of the bytes allocated in all)\n";
    out += "  " + pad("B - A", 13) + pad("A", 13) + pad("B", 13) + pad("allocated", 14) + pad("category, phase", 28)
        + "site\n";
    for (size_t i = 0; i < shown; ++i)
        out += siteLine(comparison.sites[i]);

    siteList(out, "New in " + b.label, comparison.newSites(), true, 5);
    siteList(out, "Vanished from " + b.label, comparison.vanishedSites(), false, 5);

    if (comparison.windows) {
        out += "\nStill alive after " + b.label + " of what " + a.label
            + " allocated: " + formatBytes(comparison.survivingBytes) + '\n';
        for (size_t i = 0; i < std::min<size_t>(10, comparison.surviving.size()); ++i) {
            const SurvivingSite& site = comparison.surviving[i];
            out += "  " + pad(formatBytes(site.bytes), 13)
                + pad(std::to_string(site.count) + (site.count == 1 ? " block" : " blocks"), 12)
                + pad(site.repeats ? "repeats" : "once", 9)
                + pad(
                    std::string(categoryLabel(site.key.category)) + ", " + std::string(phaseLabel(site.key.phase)), 28)
                + siteLabel(site.key) + '\n';
        }
    }
    out += "\nSummary: " + comparison.summary + '\n';
    return out;
}

} // namespace oomlens
