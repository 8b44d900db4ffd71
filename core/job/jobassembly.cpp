#include "core/job/jobassembly.h"

#include <algorithm>

namespace oomlens {

namespace {

std::string baseName(const std::string& path)
{
    const size_t slash = path.find_last_of("/\\");
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

void orderByRank(std::vector<RankSummary>& ranks)
{
    std::stable_sort(ranks.begin(), ranks.end(), [](const RankSummary& a, const RankSummary& b) {
        const bool aKnown = a.rank >= 0;
        const bool bKnown = b.rank >= 0;
        if (aKnown != bKnown)
            return aKnown;
        if (aKnown && a.rank != b.rank)
            return a.rank < b.rank;
        return a.file < b.file;
    });
}

// The median of the readable ranks' peaks; an even count takes the mean of the middle two.
double medianPeak(const std::vector<RankSummary>& ranks)
{
    std::vector<uint64_t> peaks;
    for (const RankSummary& rank : ranks) {
        if (rank.readable())
            peaks.push_back(rank.peakAllocatedBytes);
    }
    if (peaks.empty())
        return 0;
    std::sort(peaks.begin(), peaks.end());
    const size_t middle = peaks.size() / 2;
    if (peaks.size() % 2 == 1)
        return static_cast<double>(peaks[middle]);
    return (static_cast<double>(peaks[middle - 1]) + static_cast<double>(peaks[middle])) / 2.0;
}

void measureImbalance(JobSummary& job)
{
    const double median = medianPeak(job.ranks);
    job.medianPeakBytes = static_cast<uint64_t>(median);
    for (const RankSummary& rank : job.ranks) {
        if (rank.readable())
            job.maxPeakBytes = std::max(job.maxPeakBytes, rank.peakAllocatedBytes);
    }
    job.imbalance = median > 0 ? static_cast<double>(job.maxPeakBytes) / median : 1.0;
}

// The first rank to OOM is the one to read: in a collective job the others often fail only
// because a peer died (a NCCL timeout) or reach the same wall a moment later.
void nameFailingRank(JobSummary& job)
{
    std::optional<size_t> firstTimed;
    std::optional<size_t> firstOom;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (!rank.readable() || !rank.oom)
            continue;
        ++job.oomRanks;
        if (!firstOom)
            firstOom = i;
        if (rank.oomTimeUs && (!firstTimed || *rank.oomTimeUs < *job.ranks[*firstTimed].oomTimeUs))
            firstTimed = i;
    }
    if (job.oomRanks == 1) {
        job.failingRank = firstOom;
        job.failingReason = FailingRankReason::OnlyOom;
        return;
    }
    if (job.oomRanks > 1) {
        const bool allTimed = std::all_of(job.ranks.begin(), job.ranks.end(),
            [](const RankSummary& rank) { return !rank.readable() || !rank.oom || rank.oomTimeUs; });
        job.failingRank = firstTimed ? firstTimed : firstOom;
        job.failingReason = allTimed ? FailingRankReason::FirstOom : FailingRankReason::OomOrderUnknown;
        return;
    }

    // None failed: the rank with the least room left, by the card where it is known.
    std::optional<size_t> closest;
    std::optional<size_t> highest;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (!rank.readable())
            continue;
        const auto use = rank.capacityUse();
        if (use && (!closest || *use > *job.ranks[*closest].capacityUse()))
            closest = i;
        if (!highest || rank.peakReservedBytes > job.ranks[*highest].peakReservedBytes)
            highest = i;
    }
    if (closest) {
        job.failingRank = closest;
        job.failingReason = FailingRankReason::ClosestToCapacity;
    } else if (highest) {
        job.failingRank = highest;
        job.failingReason = FailingRankReason::HighestPeak;
    }
}

} // namespace

std::string rankName(const RankSummary& rank)
{
    return rank.rank >= 0 ? "rank " + std::to_string(rank.rank) : baseName(rank.file);
}

std::string rankListLabel(const std::vector<RankSummary>& ranks, const std::vector<size_t>& members)
{
    std::vector<int> numbers;
    std::vector<std::string> unnamed;
    for (size_t index : members) {
        if (ranks[index].rank >= 0)
            numbers.push_back(ranks[index].rank);
        else
            unnamed.push_back(baseName(ranks[index].file));
    }
    std::sort(numbers.begin(), numbers.end());
    std::string label;
    const auto append = [&label](const std::string& part) { label += (label.empty() ? "" : ", ") + part; };
    for (size_t i = 0; i < numbers.size();) {
        size_t j = i;
        while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1)
            ++j;
        if (j == i)
            append(std::to_string(numbers[i]));
        else
            append(std::to_string(numbers[i]) + (j == i + 1 ? ", " : "–") + std::to_string(numbers[j]));
        i = j + 1;
    }
    for (const std::string& name : unnamed)
        append(name);
    const bool plural = numbers.size() + unnamed.size() > 1;
    if (numbers.empty())
        return label;
    return (plural ? "ranks " : "rank ") + label;
}

JobSummary assembleJob(std::vector<RankSummary> ranks)
{
    JobSummary job;
    job.ranks = std::move(ranks);
    orderByRank(job.ranks);
    measureImbalance(job);
    nameFailingRank(job);
    job.groups = groupRanks(job.ranks);
    job.notes = jobNotes(job);
    return job;
}

} // namespace oomlens
