#include "core/job/jobassembly.h"

#include "core/presentation/labels.h"
#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

namespace oomlens {

namespace {

// Peaks further apart than this (max over median) are worth a sentence.
constexpr double unevenPeaks = 1.10;
// A rank holding this many times the median rank's weights, gradients or optimizer state is not a
// replica of the others: a ZeRO/FSDP shard that took more, or state left unsharded on that rank.
constexpr double stateOutlier = 1.8;
// Parameters per rank differing this much between groups of ranks: pipeline stages split unevenly.
constexpr double unevenStages = 1.25;
// Below this a category is noise (a few buffers) and its ratios mean nothing.
constexpr uint64_t meaningfulBytes = 16 * MiB;

uint64_t median(std::vector<uint64_t> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

std::vector<size_t> readable(const JobSummary& job)
{
    std::vector<size_t> out;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        if (job.ranks[i].readable())
            out.push_back(i);
    }
    return out;
}

void noteSeveralOoms(const JobSummary& job, std::vector<std::string>& notes)
{
    if (job.oomRanks < 2 || !job.failingRank)
        return;
    std::vector<size_t> failed;
    std::optional<int64_t> nextTime;
    const RankSummary& first = job.ranks[*job.failingRank];
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (!rank.readable() || !rank.oom)
            continue;
        failed.push_back(i);
        if (i != *job.failingRank && rank.oomTimeUs && (!nextTime || *rank.oomTimeUs < *nextTime))
            nextTime = rank.oomTimeUs;
    }
    std::string note = std::to_string(job.oomRanks) + " ranks hit an OOM (" + rankListLabel(job.ranks, failed) + ")";
    if (job.failingReason == FailingRankReason::FirstOom && first.oomTimeUs && nextTime) {
        note += "; " + rankName(first) + " was first, " + formatDurationUs(*nextTime - *first.oomTimeUs)
            + " before the next (by each host's clock: ranks on different hosts compare only as well as their "
              "clocks agree)";
    } else {
        note += "; their oom events carry no time, so which failed first cannot be told (" + rankName(first)
            + " is shown)";
    }
    notes.push_back(std::move(note));
}

void noteUnevenPeaks(const JobSummary& job, std::vector<std::string>& notes)
{
    if (job.imbalance < unevenPeaks || job.medianPeakBytes == 0)
        return;
    for (const RankSummary& rank : job.ranks) {
        if (rank.readable() && rank.peakAllocatedBytes == job.maxPeakBytes) {
            notes.push_back("peaks are uneven: " + rankName(rank) + " peaks at " + formatBytes(rank.peakAllocatedBytes)
                + ", " + formatRatio(job.imbalance, 1) + " the median rank's " + formatBytes(job.medianPeakBytes));
            return;
        }
    }
}

void noteStateOutliers(const JobSummary& job, std::vector<std::string>& notes)
{
    const std::vector<size_t> ranks = readable(job);
    if (ranks.size() < 3)
        return; // with two ranks, "the median" is one of them
    for (Category category : { Category::OptimizerState, Category::Parameters, Category::Gradients }) {
        const auto c = static_cast<size_t>(category);
        std::vector<uint64_t> values;
        for (size_t i : ranks)
            values.push_back(job.ranks[i].categoriesAtPeak[c]);
        const uint64_t typical = median(values);
        if (typical < meaningfulBytes)
            continue;
        std::vector<size_t> heavy;
        for (size_t i : ranks) {
            if (static_cast<double>(job.ranks[i].categoriesAtPeak[c]) >= stateOutlier * static_cast<double>(typical))
                heavy.push_back(i);
        }
        if (heavy.empty() || heavy.size() * 2 >= ranks.size())
            continue;
        const uint64_t most = job.ranks[heavy.front()].categoriesAtPeak[c];
        std::string label(categoryLabel(category));
        std::transform(label.begin(), label.end(), label.begin(),
            [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        notes.push_back(rankListLabel(job.ranks, heavy) + (heavy.size() == 1 ? " holds " : " hold ")
            + formatRatio(static_cast<double>(most) / static_cast<double>(typical), 1) + " the median rank's " + label
            + " (" + formatBytes(most) + " vs " + formatBytes(typical)
            + "): a ZeRO/FSDP shard larger than the others, or state that is not sharded there");
    }
}

void noteUnevenStages(const JobSummary& job, std::vector<std::string>& notes)
{
    if (job.groups.size() < 2)
        return;
    const auto parameters = static_cast<size_t>(Category::Parameters);
    const RankGroup* lightest = nullptr;
    const RankGroup* heaviest = nullptr;
    uint64_t least = 0;
    uint64_t most = 0;
    for (const RankGroup& group : job.groups) {
        std::vector<uint64_t> values;
        for (size_t member : group.members)
            values.push_back(job.ranks[member].categoriesAtPeak[parameters]);
        const uint64_t typical = median(values);
        if (!lightest || typical < least) {
            lightest = &group;
            least = typical;
        }
        if (!heaviest || typical > most) {
            heaviest = &group;
            most = typical;
        }
    }
    if (most < meaningfulBytes || least == 0 || static_cast<double>(most) < unevenStages * static_cast<double>(least))
        return;
    notes.push_back("the ranks hold different shares of the model: " + formatBytes(most) + " of parameters on "
        + heaviest->label + ", " + formatBytes(least) + " on " + lightest->label
        + " — pipeline stages split unevenly (move layers off the heavier stage) or parameters sharded unevenly");
}

// Memory outside PyTorch's allocator is about the same on every replica: a CUDA context, cuBLAS
// and cuDNN workspaces, NCCL's buffers for the communicators it joined. A rank holding a lot more
// joined more communicators (the last pipeline stage, a rank in more process groups), runs NCCL
// with bigger buffers, or shares its card with another process: it fails first at start-up.
void noteOutsideOutlier(const JobSummary& job, std::vector<std::string>& notes)
{
    std::vector<uint64_t> rests;
    for (const RankSummary& rank : job.ranks) {
        if (rank.readable() && rank.restOfCardBytes)
            rests.push_back(*rank.restOfCardBytes);
    }
    if (rests.size() < 2)
        return;
    const uint64_t typical = median(rests);
    for (const RankSummary& rank : job.ranks) {
        if (!rank.readable() || !rank.restOfCardBytes)
            continue;
        const uint64_t rest = *rank.restOfCardBytes;
        // More than a second CUDA context and a communicator's buffers above the others' (about
        // 1 GiB), and well above them in proportion.
        if (rest < typical + GiB || static_cast<double>(rest) < 1.5 * static_cast<double>(typical))
            continue;
        notes.push_back(rankName(rank) + " holds " + formatBytes(rest)
            + " outside PyTorch's allocator, the ranks' median " + formatBytes(typical)
            + ": more NCCL communicators or workspaces on that rank (the last pipeline stage, a rank in more process "
              "groups; smaller NCCL_BUFFSIZE, NCCL_NVLS_ENABLE=0, fewer process groups), or another process on its "
              "card (nvidia-smi)");
    }
}

void noteRankNumbers(const JobSummary& job, std::vector<std::string>& notes)
{
    std::map<int, std::vector<size_t>> byRank;
    size_t unknown = 0;
    std::optional<int> worldSize;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (rank.rank >= 0)
            byRank[rank.rank].push_back(i);
        else
            ++unknown;
        if (rank.worldSize)
            worldSize = std::max(worldSize.value_or(0), *rank.worldSize);
    }
    for (const auto& [rank, files] : byRank) {
        if (files.size() > 1) {
            notes.push_back("rank " + std::to_string(rank) + " is given " + std::to_string(files.size()) + " times ("
                + job.ranks[files.front()].file + ", " + job.ranks[files[1]].file + (files.size() > 2 ? ", …" : "")
                + "): are these two jobs?");
        }
    }
    if (unknown > 0) {
        notes.push_back(std::to_string(unknown) + (unknown == 1 ? " file says" : " files say")
            + " nothing of its rank (no rank in the name or the capture metadata); listed last by file name");
    }
    if (worldSize && static_cast<int>(byRank.size()) < *worldSize && !byRank.empty()) {
        std::vector<int> missing;
        for (int r = 0; r < *worldSize && missing.size() < 8; ++r) {
            if (!byRank.contains(r))
                missing.push_back(r);
        }
        std::string list;
        for (int r : missing)
            list += (list.empty() ? "" : ", ") + std::to_string(r);
        notes.push_back("the job has " + std::to_string(*worldSize) + " ranks (world_size) but "
            + std::to_string(byRank.size()) + " are given; missing: " + list
            + (static_cast<int>(missing.size()) < *worldSize - static_cast<int>(byRank.size()) ? ", …" : ""));
    }
}

void noteUnreadable(const JobSummary& job, std::vector<std::string>& notes)
{
    const size_t count = static_cast<size_t>(
        std::count_if(job.ranks.begin(), job.ranks.end(), [](const RankSummary& rank) { return !rank.readable(); }));
    if (count > 0) {
        notes.push_back(std::to_string(count) + (count == 1 ? " rank file" : " rank files")
            + " could not be read; the figures above leave " + (count == 1 ? "it" : "them") + " out");
    }
}

} // namespace

std::vector<std::string> jobNotes(const JobSummary& job)
{
    std::vector<std::string> notes;
    noteSeveralOoms(job, notes);
    noteUnevenStages(job, notes);
    noteStateOutliers(job, notes);
    noteUnevenPeaks(job, notes);
    noteOutsideOutlier(job, notes);
    noteRankNumbers(job, notes);
    noteUnreadable(job, notes);
    return notes;
}

} // namespace oomlens
