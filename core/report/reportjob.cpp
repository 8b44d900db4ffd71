#include "core/report/reportbuilder.h"

#include "core/job/jobassembly.h"
#include "core/job/jobsummary.h"
#include "core/job/jobtext.h"
#include "core/presentation/labels.h"
#include "core/report/charts.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace oomlens::report {

namespace {

constexpr double chartWidth = 960;
constexpr double chartHeight = 300;
constexpr double plotLeft = 72;
constexpr double plotRight = 944;
constexpr double plotTop = 28;
constexpr double plotBottom = 268;

// Binary steps, as the timeline's axis (timelinechart.cpp): ticks read like the sizes in OOM messages.
uint64_t byteStep(uint64_t maximum)
{
    uint64_t step = 1;
    while (maximum / step > 5)
        step *= 2;
    return step;
}

// The card, when every rank that knows it agrees: one line across the chart means one card size.
std::optional<uint64_t> commonCapacity(const JobSummary& job)
{
    std::optional<uint64_t> capacity;
    for (const RankSummary& rank : job.ranks) {
        if (!rank.capacityBytes)
            continue;
        if (capacity && *capacity != *rank.capacityBytes)
            return std::nullopt;
        capacity = rank.capacityBytes;
    }
    return capacity;
}

// One column per rank, its peak's categories stacked (parameters at the bottom, as in the
// timeline), a tick at its peak reserved, the card's line when known, and the ranks that hit an
// OOM marked above their column.
std::string rankPeaksSvg(const JobSummary& job)
{
    SvgWriter svg(chartWidth, chartHeight, "chart job-ranks", "Peak allocated memory of every rank, by category");
    const std::optional<uint64_t> capacity = commonCapacity(job);
    uint64_t top = std::max<uint64_t>(job.maxPeakBytes, capacity.value_or(0));
    for (const RankSummary& rank : job.ranks)
        top = std::max(top, rank.peakReservedBytes);
    top = std::max<uint64_t>(top, 1);
    const uint64_t step = byteStep(top);
    const uint64_t axisMax = (top / step + 1) * step; // never clip the highest bar
    const auto yOf = [&](uint64_t bytes) {
        return plotBottom - (plotBottom - plotTop) * static_cast<double>(bytes) / static_cast<double>(axisMax);
    };
    for (uint64_t tick = 0; tick <= axisMax; tick += step) {
        svg.line(plotLeft, yOf(tick), plotRight, yOf(tick), tick == 0 ? "axis" : "grid");
        svg.text(plotLeft - 6, yOf(tick) + 4, formatAxisBytes(tick), "tick", SvgWriter::Anchor::End);
    }

    const double slot = (plotRight - plotLeft) / static_cast<double>(std::max<size_t>(job.ranks.size(), 1));
    const double barWidth = std::max(1.0, slot * 0.72);
    // Label every column while they are wide enough to read, else every n-th.
    const size_t labelEvery = std::max<size_t>(1, static_cast<size_t>(std::ceil(28.0 / slot)));
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        const double x = plotLeft + slot * static_cast<double>(i) + (slot - barWidth) / 2;
        const double middle = x + barWidth / 2;
        const std::string name = rankName(rank);
        if (i % labelEvery == 0) {
            svg.text(middle, plotBottom + 16, rank.rank >= 0 ? std::to_string(rank.rank) : "?", "tick",
                SvgWriter::Anchor::Middle);
        }
        if (!rank.readable()) {
            svg.text(middle, plotBottom - 6, "×", "tick", SvgWriter::Anchor::Middle);
            continue;
        }
        svg.beginGroup("rank", name + " (" + rank.file + "): peak " + formatBytes(rank.peakAllocatedBytes));
        uint64_t below = 0;
        for (int c = 0; c < categoryCount; ++c) {
            const uint64_t bytes = rank.categoriesAtPeak[static_cast<size_t>(c)];
            if (bytes == 0)
                continue;
            const auto category = static_cast<Category>(c);
            svg.rect(x, yOf(below + bytes), barWidth, yOf(below) - yOf(below + bytes),
                "band " + categoryClass(category),
                name + ": " + std::string(categoryLabel(category)) + " " + formatBytes(bytes) + " at its peak");
            below += bytes;
        }
        svg.endGroup();
        if (rank.peakReservedBytes > 0)
            svg.line(x, yOf(rank.peakReservedBytes), x + barWidth, yOf(rank.peakReservedBytes), "reserved-line");
        if (rank.oom) {
            const bool first = job.failingRank && *job.failingRank == i;
            svg.text(middle, yOf(std::max(rank.peakAllocatedBytes, rank.peakReservedBytes)) - 6,
                first && job.oomRanks > 1 ? "first OOM" : "OOM", "marker-label", SvgWriter::Anchor::Middle);
        } else if (job.failingRank && *job.failingRank == i) {
            svg.text(middle, yOf(std::max(rank.peakAllocatedBytes, rank.peakReservedBytes)) - 6, "closest",
                "marker-label", SvgWriter::Anchor::Middle);
        }
    }
    if (capacity) {
        svg.line(plotLeft, yOf(*capacity), plotRight, yOf(*capacity), "capacity-line");
        svg.text(plotRight, yOf(*capacity) - 4, "card " + formatBytes(*capacity), "tick", SvgWriter::Anchor::End);
    }
    return svg.finish();
}

std::string ratio(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    return buffer;
}

} // namespace

// The job section; written only when ReportOptions::job is set.
void ReportBuilder::writeJob()
{
    if (!m_options.job)
        return;
    const JobSummary& job = *m_options.job;
    beginSection("job", "Job: every rank");

    raw("<p><strong>");
    text(job.failingIsClosestOnly() ? "Closest to the limit: " : "Failing rank: ");
    raw("</strong>");
    text(failingRankSentence(job));
    if (job.failing()) {
        raw(" <a href=\"#diagnosis\">Its diagnosis</a> and <a href=\"#snapshots\">its timeline</a> follow.");
    }
    raw("</p>\n");
    if (job.medianPeakBytes > 0) {
        element("p",
            "Imbalance " + ratio(job.imbalance) + ": the highest peak is " + formatBytes(job.maxPeakBytes)
                + ", the median " + formatBytes(job.medianPeakBytes) + ".");
        raw("\n");
    }

    raw("<div class=\"figure\">\n");
    raw(rankPeaksSvg(job));
    raw("\n<div class=\"legend\">");
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        const bool held = std::any_of(job.ranks.begin(), job.ranks.end(),
            [c](const RankSummary& rank) { return rank.categoriesAtPeak[static_cast<size_t>(c)] > 0; });
        if (!held && !listedWhenEmpty(category))
            continue;
        raw("<span><span class=\"swatch ");
        raw(categoryClass(category));
        raw("\"></span>");
        text(categoryLabel(category));
        raw("</span> ");
    }
    raw("<span><span class=\"swatch reserved\"></span>peak reserved</span></div>\n</div>\n");

    raw("<table>\n<tr><th>rank</th><th>peak allocated</th><th>peak reserved</th><th>card</th><th>OOM</th>"
        "<th>group</th><th>top diagnosis</th><th>file</th></tr>\n");
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        raw(job.failingRank && *job.failingRank == i ? "<tr class=\"failing\">" : "<tr>");
        element("td", rank.rank >= 0 ? std::to_string(rank.rank) : "?");
        if (!rank.readable()) {
            raw("<td colspan=\"6\"><span class=\"badge error\">not read</span> ");
            text(rank.error);
            raw("</td>");
        } else {
            element("td", formatBytes(rank.peakAllocatedBytes));
            element("td", formatBytes(rank.peakReservedBytes));
            element("td", rank.capacityBytes ? formatBytes(*rank.capacityBytes) : "—");
            if (rank.oom)
                raw("<td><span class=\"badge error\">OOM</span></td>");
            else
                element("td", "—");
            element("td", std::to_string(rank.group + 1));
            element("td", rank.topDiagnosisTitle.empty() ? "—" : rank.topDiagnosisTitle);
        }
        element("td", rank.file);
        raw("</tr>\n");
    }
    raw("</table>\n");

    if (!job.groups.empty()) {
        element("h3",
            "Ranks that look alike (peaks within " + std::to_string(static_cast<int>(JobSummary::groupTolerance * 100))
                + "% and the same mix of categories)");
        raw("\n");
        std::vector<std::string> groups;
        for (size_t g = 0; g < job.groups.size(); ++g) {
            const RankGroup& group = job.groups[g];
            const std::string peaks = group.minPeakBytes == group.maxPeakBytes
                ? formatBytes(group.maxPeakBytes)
                : formatBytes(group.minPeakBytes) + "–" + formatBytes(group.maxPeakBytes);
            std::string mostly(categoryLabel(group.dominantCategory));
            std::transform(mostly.begin(), mostly.end(), mostly.begin(),
                [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            groups.push_back(
                "Group " + std::to_string(g + 1) + " — " + group.label + ": peak " + peaks + ", mostly " + mostly);
        }
        writeList(groups);
    }
    std::vector<std::string> notes = job.notes;
    for (const RankSummary& rank : job.ranks) {
        for (const std::string& note : rank.notes)
            notes.push_back(rankName(rank) + ": " + note);
    }
    if (!notes.empty()) {
        element("h3", "Notes");
        raw("\n");
        writeList(notes);
    }
    endSection();
}

} // namespace oomlens::report
