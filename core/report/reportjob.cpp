
#include "core/job/jobassembly.h"
#include "core/job/jobsummary.h"
#include "core/job/jobtext.h"
#include "core/presentation/labels.h"
#include "core/report/chartframe.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/report/svgwriter.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>

namespace oomlens::report::sections {

namespace {

constexpr const PlotFrame& frame = frames::jobRanks;

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

// Where `bytes` sits on the chart's vertical axis.
double heightOf(const ByteAxis& axis, uint64_t bytes)
{
    return frame.bottom - (frame.bottom - frame.top) * static_cast<double>(bytes) / static_cast<double>(axis.max);
}

// Where a rank's column sits: its left edge and width.
struct RankColumn
{
    double x = 0;
    double width = 0;
    double middle() const { return x + width / 2; }
};

// The rank's peak, its categories stacked from the bottom, and its peak reserved as a tick.
void rankBar(SvgWriter& svg, const RankSummary& rank, const RankColumn& column, const ByteAxis& axis)
{
    const auto yOf = [&axis](uint64_t bytes) { return heightOf(axis, bytes); };
    const std::string name = rankName(rank);
    svg.beginGroup("rank", name + " (" + rank.file + "): peak " + formatBytes(rank.peakAllocatedBytes));
    uint64_t below = 0;
    for (int c = 0; c < categoryCount; ++c) {
        const uint64_t bytes = rank.categoriesAtPeak[static_cast<size_t>(c)];
        if (bytes == 0)
            continue;
        const auto category = static_cast<Category>(c);
        svg.rect(column.x, yOf(below + bytes), column.width, yOf(below) - yOf(below + bytes),
            "band " + categoryClass(category),
            name + ": " + std::string(categoryLabel(category)) + " " + formatBytes(bytes) + " at its peak");
        below += bytes;
    }
    svg.endGroup();
    if (rank.peakReservedBytes > 0)
        svg.line(column.x, yOf(rank.peakReservedBytes), column.x + column.width, yOf(rank.peakReservedBytes),
            "reserved-line");
}

// "OOM" (or "first OOM" when several ranks hit one) above a rank that ran out, "closest" above the
// rank nearest the limit when none did.
std::string_view rankMarker(const JobSummary& job, size_t index)
{
    const bool failing = job.failingRank && *job.failingRank == index;
    if (job.ranks[index].oom)
        return failing && job.oomRanks > 1 ? "first OOM" : "OOM";
    return failing ? "closest" : "";
}

// One column per rank, its peak's categories stacked (parameters at the bottom, as in the
// timeline), a tick at its peak reserved, the card's line when known, and the ranks that hit an
// OOM marked above their column.
std::string rankPeaksSvg(const JobSummary& job)
{
    SvgWriter svg(frame.width, frame.height, "chart job-ranks", "Peak allocated memory of every rank, by category");
    const std::optional<uint64_t> capacity = commonCapacity(job);
    uint64_t top = std::max<uint64_t>(job.maxPeakBytes, capacity.value_or(0));
    for (const RankSummary& rank : job.ranks)
        top = std::max(top, rank.peakReservedBytes);
    top = std::max<uint64_t>(top, 1);
    const ByteAxis axis = byteAxisFor(top); // never clips the highest bar
    const auto yOf = [&axis](uint64_t bytes) { return heightOf(axis, bytes); };
    drawByteGrid(svg, frame, axis);

    const double slot = (frame.right - frame.left) / static_cast<double>(std::max<size_t>(job.ranks.size(), 1));
    const double barWidth = std::max(1.0, slot * 0.72);
    // Label every column while they are wide enough to read, else every n-th.
    const size_t labelEvery = std::max<size_t>(1, static_cast<size_t>(std::ceil(28.0 / slot)));
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        const RankColumn column { frame.left + slot * static_cast<double>(i) + (slot - barWidth) / 2, barWidth };
        if (i % labelEvery == 0) {
            svg.text(column.middle(), frame.bottom + 16, rank.rank >= 0 ? std::to_string(rank.rank) : "?", "tick",
                SvgWriter::Anchor::Middle);
        }
        if (!rank.readable()) {
            svg.text(column.middle(), frame.bottom - 6, "×", "tick", SvgWriter::Anchor::Middle);
            continue;
        }
        rankBar(svg, rank, column, axis);
        const std::string_view marker = rankMarker(job, i);
        if (!marker.empty())
            svg.text(column.middle(), yOf(std::max(rank.peakAllocatedBytes, rank.peakReservedBytes)) - 6, marker,
                "marker-label", SvgWriter::Anchor::Middle);
    }
    if (capacity) {
        svg.line(frame.left, yOf(*capacity), frame.right, yOf(*capacity), "capacity-line");
        svg.text(frame.right, yOf(*capacity) - 4, "card " + formatBytes(*capacity), "tick", SvgWriter::Anchor::End);
    }
    return svg.finish();
}

// The rank that failed first (or came closest), with links to its diagnosis and timeline.
void failingRank(HtmlWriter& html, const JobSummary& job)
{
    html.raw("<p><strong>");
    html.text(job.failingIsClosestOnly() ? "Closest to the limit: " : "Failing rank: ");
    html.raw("</strong>");
    html.text(failingRankSentence(job));
    if (job.failing()) {
        html.raw(" <a href=\"#diagnosis\">Its diagnosis</a> and <a href=\"#snapshots\">its timeline</a> follow.");
    }
    html.raw("</p>\n");
    if (job.medianPeakBytes > 0) {
        html.element("p",
            "Imbalance " + formatRatio(job.imbalance) + ": the highest peak is " + formatBytes(job.maxPeakBytes)
                + ", the median " + formatBytes(job.medianPeakBytes) + ".");
        html.raw("\n");
    }
}

void rankPeaksFigure(HtmlWriter& html, const JobSummary& job)
{
    html.raw("<div class=\"figure\">\n");
    html.svg(rankPeaksSvg(job));
    html.raw("\n<div class=\"legend\">");
    parts::categoryLegend(html, [&job](Category category) {
        return std::any_of(job.ranks.begin(), job.ranks.end(),
            [category](const RankSummary& rank) { return rank.categoriesAtPeak[static_cast<size_t>(category)] > 0; });
    });
    html.legendEntry("reserved", "peak reserved");
    html.raw("</div>\n</div>\n");
}

// A rank's figures, or why its file was not read.
void rankCells(HtmlWriter& html, const RankSummary& rank)
{
    if (!rank.readable()) {
        html.raw("<td colspan=\"6\"><span class=\"badge error\">not read</span> ");
        html.text(rank.error);
        html.raw("</td>");
        return;
    }
    html.element("td", formatBytes(rank.peakAllocatedBytes));
    html.element("td", formatBytes(rank.peakReservedBytes));
    html.element("td", rank.capacityBytes ? formatBytes(*rank.capacityBytes) : "—");
    if (rank.oom)
        html.raw("<td><span class=\"badge error\">OOM</span></td>");
    else
        html.element("td", "—");
    html.element("td", std::to_string(rank.group + 1));
    html.element("td", rank.topDiagnosisTitle.empty() ? "—" : rank.topDiagnosisTitle);
}

void rankTable(HtmlWriter& html, const JobSummary& job)
{
    html.raw("<table>\n<tr><th>rank</th><th>peak allocated</th><th>peak reserved</th><th>card</th><th>OOM</th>"
             "<th>group</th><th>top diagnosis</th><th>file</th></tr>\n");
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (job.failingRank && *job.failingRank == i)
            html.raw("<tr class=\"failing\">");
        else
            html.raw("<tr>");
        html.element("td", rank.rank >= 0 ? std::to_string(rank.rank) : "?");
        rankCells(html, rank);
        html.element("td", rank.file);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

void rankGroups(HtmlWriter& html, const JobSummary& job)
{
    html.element("h3",
        "Ranks that look alike (peaks within " + std::to_string(static_cast<int>(JobSummary::groupTolerance * 100))
            + "% and the same mix of categories)");
    html.raw("\n");
    std::vector<std::string> groups;
    for (size_t g = 0; g < job.groups.size(); ++g) {
        const RankGroup& group = job.groups[g];
        const std::string peaks = group.minPeakBytes == group.maxPeakBytes
            ? formatBytes(group.maxPeakBytes)
            : formatBytes(group.minPeakBytes) + "–" + formatBytes(group.maxPeakBytes);
        const std::string mostly = lowercase(categoryLabel(group.dominantCategory));
        groups.push_back(
            "Group " + std::to_string(g + 1) + " — " + group.label + ": peak " + peaks + ", mostly " + mostly);
    }
    html.list(groups);
}

// The job's notes, then each rank's, named by rank.
void jobNotes(HtmlWriter& html, const JobSummary& job)
{
    std::vector<std::string> notes = job.notes;
    for (const RankSummary& rank : job.ranks) {
        for (const std::string& note : rank.notes)
            notes.push_back(rankName(rank) + ": " + note);
    }
    if (!notes.empty()) {
        html.element("h3", "Notes");
        html.raw("\n");
        html.list(notes);
    }
}

} // namespace

// The job section; written only when ReportOptions::job is set.
void job(HtmlWriter& html, const ReportContext& context)
{
    if (!context.options.job)
        return;
    const JobSummary& job = *context.options.job;
    html.beginSection("job", "Job: every rank");
    failingRank(html, job);
    rankPeaksFigure(html, job);
    rankTable(html, job);
    if (!job.groups.empty())
        rankGroups(html, job);
    jobNotes(html, job);
    html.endSection();
}

} // namespace oomlens::report::sections
