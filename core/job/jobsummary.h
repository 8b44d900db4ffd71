#pragma once

// A distributed job seen through its rank files (`rank*.pickle`): one small summary per rank and
// what they say together (which rank failed, how uneven the ranks are, which look alike). Built by
// core/job/jobsummarizer.h without keeping any rank's decoded snapshot; the CLI, the HTML report
// and the app's Job view all read this one value.

#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/diagnosisid.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace oomlens {

// Where a rank's number came from. Metadata (a capture sidecar beside the file or embedded in the
// snapshot's user_metadata) wins over the file name; a disagreement is noted on the rank.
enum class RankSource : uint8_t { Unknown, FileName, Metadata };

// One rank file reduced to what the job needs; its decoded snapshot is gone by the time this exists.
struct RankSummary
{
    std::string file; // the path as given
    int rank = -1; // -1 when neither the name nor the metadata says
    RankSource rankSource = RankSource::Unknown;
    std::optional<int> rankFromName; // rank3, rank_3, rank-03, r3, ..._3.pickle
    std::optional<int> rankFromMetadata; // CaptureSidecar::rank
    std::optional<int> worldSize; // CaptureSidecar::worldSize
    std::string error; // non-empty: the file could not be read; the figures below are empty

    int32_t device = 0; // the snapshot's primary device
    uint64_t peakAllocatedBytes = 0; // requested bytes, as `peak_allocated_bytes` in the JSON
    uint64_t peakReservedBytes = 0;
    int64_t peakTimeUs = 0;
    CategoryBytes categoriesAtPeak {}; // adds up to peakAllocatedBytes

    // The call sites holding the most requested bytes at the peak ("model.py:12 forward", as the
    // report names a site), largest first, at most RankSummary::topSiteCount: what a rank's peak is
    // made of, readable from its summary without its snapshot.
    std::vector<std::pair<std::string, uint64_t>> topSitesAtPeak;
    static constexpr size_t topSiteCount = 5;

    bool oom = false; // the snapshot holds an oom event
    CategoryBytes categoriesAtOom {}; // live at its first oom event; zero without one
    std::optional<int64_t> oomTimeUs; // time_us of its first oom event, when the trace carries time
    std::optional<uint64_t> capacityBytes; // the card (sidecar, nvidia-smi, linked message); unknown otherwise
    // Used on the card but not by PyTorch's allocator (card_reconciliation's rest of the card: CUDA
    // context, NCCL, cuBLAS, other processes); unknown without the card's used memory.
    std::optional<uint64_t> restOfCardBytes;
    std::optional<std::string> deviceName;

    std::optional<DiagnosisId> topDiagnosisId; // the rank's most likely diagnosis on its own
    std::string topDiagnosisTitle;

    int group = -1; // index into JobSummary::groups; -1 for a rank that could not be read
    std::vector<std::string> notes; // this rank only ("the file name says rank 3, its metadata rank 5")

    // The `oomlens summarize` file this rank was read from (summarized where its snapshot lies, on
    // the cluster); empty when it was summarized here from the snapshot itself. `file` is then
    // the snapshot's path as it was given to `summarize`.
    std::string summaryFile;

    bool readable() const { return error.empty(); }
    // Peak reserved over capacity, when the capacity is known: how close the rank came to the card.
    std::optional<double> capacityUse() const
    {
        if (!capacityBytes || *capacityBytes == 0)
            return std::nullopt;
        return static_cast<double>(peakReservedBytes) / static_cast<double>(*capacityBytes);
    }
};

// Ranks that look alike: peaks within JobSummary::groupTolerance of each other and the same mix of
// categories. Data-parallel replicas land in one group; pipeline stages and uneven shards do not.
struct RankGroup
{
    std::vector<size_t> members; // indices into JobSummary::ranks, ascending by rank
    uint64_t minPeakBytes = 0;
    uint64_t maxPeakBytes = 0;
    Category dominantCategory = Category::Unknown; // the largest band at the members' peaks
    std::string label; // "ranks 0–3, 5" (the rank numbers, or file names where unknown)
};

enum class FailingRankReason : uint8_t {
    None, // no rank could be read
    OnlyOom, // exactly one rank holds an oom event
    FirstOom, // several did; this one's came first by time_us
    OomOrderUnknown, // several did and their oom events carry no time: the lowest rank is named
    ClosestToCapacity, // none failed; the highest peak reserved over a known capacity
    HighestPeak, // none failed and no capacity is known: the highest peak reserved
};

struct JobSummary
{
    std::vector<RankSummary> ranks; // by rank number; unknown ranks last, by file name
    std::optional<size_t> failingRank; // index into ranks
    FailingRankReason failingReason = FailingRankReason::None;
    size_t oomRanks = 0; // ranks holding an oom event

    // Max over median of the readable ranks' peak allocated bytes; 1.0 is perfectly even.
    double imbalance = 1.0;
    uint64_t medianPeakBytes = 0;
    uint64_t maxPeakBytes = 0;

    std::vector<RankGroup> groups; // the largest first
    std::vector<std::string> notes; // job-level observations, most telling first

    size_t workers = 0; // decoding threads the summarizer used
    size_t fromSummaries = 0; // ranks read from `oomlens summarize` files instead of their snapshots
    // The failing rank came from a summary and its snapshot is not here to open in full: the
    // snapshot's path where it was summarized, the file to copy. Empty otherwise.
    std::string failingSnapshotToCopy;
    // Relative peak difference under which two ranks count as alike (see jobgrouping.cpp for why).
    static constexpr double groupTolerance = 0.05;

    const RankSummary* failing() const { return failingRank ? &ranks[*failingRank] : nullptr; }
    // True when the failing rank did not hit an OOM but is named as the one that came closest.
    bool failingIsClosestOnly() const
    {
        return failingReason == FailingRankReason::ClosestToCapacity || failingReason == FailingRankReason::HighestPeak;
    }
};

} // namespace oomlens
