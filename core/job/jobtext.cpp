#include "core/job/jobtext.h"

#include "core/job/jobassembly.h"
#include "core/presentation/labels.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace oomlens {

namespace {

std::string ratio(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    return buffer;
}

} // namespace

std::string_view failingReasonName(FailingRankReason reason)
{
    switch (reason) {
    case FailingRankReason::OnlyOom:
        return "only_oom";
    case FailingRankReason::FirstOom:
        return "first_oom";
    case FailingRankReason::OomOrderUnknown:
        return "oom_order_unknown";
    case FailingRankReason::ClosestToCapacity:
        return "closest_to_capacity";
    case FailingRankReason::HighestPeak:
        return "highest_peak";
    case FailingRankReason::None:
        break;
    }
    return "none";
}

std::string failingRankSentence(const JobSummary& job)
{
    const RankSummary* rank = job.failing();
    if (!rank)
        return "No rank could be read, so none can be named as the failing one.";
    std::string sentence = rankName(*rank) + " (" + rank->file + ")";
    switch (job.failingReason) {
    case FailingRankReason::OnlyOom:
        return sentence + ": the only rank that hit an OOM.";
    case FailingRankReason::FirstOom:
        return sentence + ": the first of " + std::to_string(job.oomRanks) + " ranks to hit an OOM.";
    case FailingRankReason::OomOrderUnknown:
        return sentence + ": one of " + std::to_string(job.oomRanks)
            + " ranks that hit an OOM; their events carry no time, so the first cannot be told.";
    case FailingRankReason::ClosestToCapacity: {
        const double use = rank->capacityUse().value_or(0);
        char share[32];
        std::snprintf(share, sizeof share, "%.0f%%", use * 100);
        return sentence + ": no rank hit an OOM; this one came closest, reserving " + share + " of its "
            + formatBytes(*rank->capacityBytes) + " card.";
    }
    case FailingRankReason::HighestPeak:
        return sentence + ": no rank hit an OOM; this one reserved the most (" + formatBytes(rank->peakReservedBytes)
            + "; the card's size is not known).";
    case FailingRankReason::None:
        break;
    }
    return sentence + ".";
}

std::string failingRankHeading(const JobSummary& job)
{
    const RankSummary* rank = job.failing();
    if (!rank)
        return "== No rank could be read; the other inputs follow ==";
    const std::string heading
        = std::string(job.failingIsClosestOnly() ? "== The rank closest to the limit: " : "== The failing rank: ")
        + rankName(*rank) + " (" + rank->file + ")";
    // Read from a summary, with its snapshot left on the cluster: the notes say which file to copy.
    if (!job.failingSnapshotToCopy.empty())
        return heading + ": its snapshot is not here; the notes say which file to copy ==";
    return heading + " ==";
}

std::string jobToText(const JobSummary& job)
{
    std::string out;
    size_t readable = 0;
    for (const RankSummary& rank : job.ranks)
        readable += rank.readable() ? 1 : 0;
    out += "Job: " + std::to_string(job.ranks.size()) + (job.ranks.size() == 1 ? " rank file" : " rank files");
    if (readable != job.ranks.size())
        out += " (" + std::to_string(readable) + " readable)";
    if (job.fromSummaries > 0)
        out += ", " + std::to_string(job.fromSummaries) + " read from summaries";
    if (job.workers > 0)
        out += ", summarized by " + std::to_string(job.workers) + (job.workers == 1 ? " worker" : " workers");
    out += "\n";
    out += "Failing rank: " + failingRankSentence(job) + "\n";
    if (job.medianPeakBytes > 0) {
        out += "Imbalance: " + ratio(job.imbalance) + " (highest peak " + formatBytes(job.maxPeakBytes)
            + " over the median " + formatBytes(job.medianPeakBytes) + ")\n";
    }

    out += "\n  rank  peak allocated  peak reserved      capacity  OOM  group  top diagnosis         file\n";
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        const std::string number = rank.rank >= 0 ? std::to_string(rank.rank) : "?";
        const char* marker = job.failingRank && *job.failingRank == i ? "> " : "  ";
        if (!rank.readable()) {
            out += marker + padLeft(number, 4) + "  unreadable: " + rank.error + "  " + rank.file + "\n";
            continue;
        }
        out += marker + padLeft(number, 4) + "  " + padLeft(formatBytes(rank.peakAllocatedBytes), 14) + "  "
            + padLeft(formatBytes(rank.peakReservedBytes), 13) + "  "
            + padLeft(rank.capacityBytes ? formatBytes(*rank.capacityBytes) : "—", 12) + "  "
            + (rank.oom ? "yes" : " - ") + "  " + padLeft(std::to_string(rank.group + 1), 5) + "  "
            + padRight(rank.topDiagnosisId ? diagnosisIdText(*rank.topDiagnosisId) : "—", 20) + "  " + rank.file + "\n";
    }

    if (!job.groups.empty()) {
        out += "\nRanks that look alike (peaks within "
            + std::to_string(static_cast<int>(JobSummary::groupTolerance * 100)) + "% and the same mix):\n";
        for (size_t g = 0; g < job.groups.size(); ++g) {
            const RankGroup& group = job.groups[g];
            const std::string peaks = group.minPeakBytes == group.maxPeakBytes
                ? formatBytes(group.maxPeakBytes)
                : formatBytes(group.minPeakBytes) + "–" + formatBytes(group.maxPeakBytes);
            out += "  " + std::to_string(g + 1) + ". " + group.label + ": peak " + peaks + ", mostly "
                + lowercase(categoryLabel(group.dominantCategory)) + "\n";
        }
    }
    std::vector<std::string> notes = job.notes;
    for (const RankSummary& rank : job.ranks) {
        for (const std::string& note : rank.notes)
            notes.push_back(rankName(rank) + ": " + note);
    }
    if (!notes.empty()) {
        out += "\nNotes:\n";
        for (const std::string& note : notes)
            out += "  - " + note + "\n";
    }
    return out;
}

} // namespace oomlens
