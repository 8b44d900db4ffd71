#include "core/job/jobassembly.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace oomlens {

// Why 5 %: data-parallel replicas run the same model and hold the same weights, gradients and
// optimizer state; only their activations follow their batches (sequence lengths, padding) and the
// allocator rounds each block to 512 B or 2 MiB. Their peaks differ by a few percent. A pipeline
// stage with one more layer, the stage that also holds the embedding or the LM head, microbatches
// kept in flight by 1F1B, or a ZeRO shard holding twice the state move the peak or the mix by
// tens of percent. The same 5 % bounds the category mix: at most 5 % of the bytes would have to
// change category for two ranks' mixes to be equal.

namespace {

std::array<double, categoryCount> shares(const RankSummary& rank)
{
    std::array<double, categoryCount> out {};
    const uint64_t total = std::accumulate(rank.categoriesAtPeak.begin(), rank.categoriesAtPeak.end(), uint64_t(0));
    if (total == 0)
        return out;
    for (size_t c = 0; c < out.size(); ++c)
        out[c] = static_cast<double>(rank.categoriesAtPeak[c]) / static_cast<double>(total);
    return out;
}

// Half the L1 distance: the share of bytes that would have to change category.
double mixDistance(const RankSummary& a, const RankSummary& b)
{
    const auto sa = shares(a);
    const auto sb = shares(b);
    double sum = 0;
    for (size_t c = 0; c < sa.size(); ++c)
        sum += std::abs(sa[c] - sb[c]);
    return sum / 2.0;
}

// Anchored at the group's largest peak, so a slow drift (100, 96, 92, 88 ...) cannot chain ranks
// that differ by far more than the tolerance into one group.
bool alike(const RankSummary& anchor, const RankSummary& candidate)
{
    const double peak = static_cast<double>(anchor.peakAllocatedBytes);
    const double difference = peak - static_cast<double>(candidate.peakAllocatedBytes);
    const bool peakClose
        = peak == 0 ? candidate.peakAllocatedBytes == 0 : difference <= JobSummary::groupTolerance * peak;
    return peakClose && mixDistance(anchor, candidate) <= JobSummary::groupTolerance;
}

Category dominant(const CategoryBytes& bytes)
{
    const auto largest = std::max_element(bytes.begin(), bytes.end());
    return *largest == 0 ? Category::Unknown : static_cast<Category>(largest - bytes.begin());
}

} // namespace

std::vector<RankGroup> groupRanks(std::vector<RankSummary>& ranks)
{
    std::vector<size_t> byPeak;
    for (size_t i = 0; i < ranks.size(); ++i) {
        ranks[i].group = -1;
        if (ranks[i].readable())
            byPeak.push_back(i);
    }
    std::stable_sort(byPeak.begin(), byPeak.end(),
        [&ranks](size_t a, size_t b) { return ranks[a].peakAllocatedBytes > ranks[b].peakAllocatedBytes; });

    std::vector<RankGroup> groups;
    std::vector<bool> taken(ranks.size(), false);
    for (size_t a = 0; a < byPeak.size(); ++a) {
        const size_t anchor = byPeak[a];
        if (taken[anchor])
            continue;
        RankGroup group;
        for (size_t b = a; b < byPeak.size(); ++b) {
            const size_t candidate = byPeak[b];
            if (!taken[candidate] && alike(ranks[anchor], ranks[candidate])) {
                taken[candidate] = true;
                group.members.push_back(candidate);
            }
        }
        std::sort(group.members.begin(), group.members.end());
        CategoryBytes total {};
        group.minPeakBytes = ranks[group.members.front()].peakAllocatedBytes;
        for (size_t member : group.members) {
            group.minPeakBytes = std::min(group.minPeakBytes, ranks[member].peakAllocatedBytes);
            group.maxPeakBytes = std::max(group.maxPeakBytes, ranks[member].peakAllocatedBytes);
            for (size_t c = 0; c < total.size(); ++c)
                total[c] += ranks[member].categoriesAtPeak[c];
        }
        group.dominantCategory = dominant(total);
        group.label = rankListLabel(ranks, group.members);
        groups.push_back(std::move(group));
    }
    // The largest group first (the bulk of the job), then by the first member's position.
    std::stable_sort(groups.begin(), groups.end(), [](const RankGroup& a, const RankGroup& b) {
        if (a.members.size() != b.members.size())
            return a.members.size() > b.members.size();
        return a.members.front() < b.members.front();
    });
    for (size_t g = 0; g < groups.size(); ++g) {
        for (size_t member : groups[g].members)
            ranks[member].group = static_cast<int>(g);
    }
    return groups;
}

} // namespace oomlens
