#include "core/job/jobjson.h"

#include "core/job/jobtext.h"

namespace oomlens {

namespace {

template <typename T> nlohmann::ordered_json optional(const std::optional<T>& value)
{
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

std::string_view rankSourceName(RankSource source)
{
    switch (source) {
    case RankSource::FileName:
        return "file_name";
    case RankSource::Metadata:
        return "metadata";
    case RankSource::Unknown:
        break;
    }
    return "unknown";
}

nlohmann::ordered_json rankToJson(const RankSummary& rank)
{
    nlohmann::ordered_json out;
    out["rank"] = rank.rank >= 0 ? nlohmann::ordered_json(rank.rank) : nlohmann::ordered_json(nullptr);
    out["file"] = rank.file;
    out["peak_allocated_bytes"] = rank.peakAllocatedBytes;
    out["oom"] = rank.oom;
    out["rank_source"] = rankSourceName(rank.rankSource);
    out["world_size"] = optional(rank.worldSize);
    out["error"] = rank.readable() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rank.error);
    out["device"] = rank.device;
    out["peak_reserved_bytes"] = rank.peakReservedBytes;
    out["peak_time_us"] = rank.peakTimeUs;
    nlohmann::ordered_json categories = nlohmann::ordered_json::object();
    for (int c = 0; c < categoryCount; ++c)
        categories[std::string(categoryName(static_cast<Category>(c)))] = rank.categoriesAtPeak[static_cast<size_t>(c)];
    out["categories_at_peak"] = std::move(categories);
    nlohmann::ordered_json sites = nlohmann::ordered_json::array();
    for (const auto& [site, bytes] : rank.topSitesAtPeak)
        sites.push_back({ { "site", site }, { "bytes", bytes } });
    out["top_sites_at_peak"] = std::move(sites);
    out["oom_time_us"] = optional(rank.oomTimeUs);
    if (rank.oom) {
        nlohmann::ordered_json atOom = nlohmann::ordered_json::object();
        for (int c = 0; c < categoryCount; ++c)
            atOom[std::string(categoryName(static_cast<Category>(c)))] = rank.categoriesAtOom[static_cast<size_t>(c)];
        out["categories_at_oom"] = std::move(atOom);
    } else {
        out["categories_at_oom"] = nullptr;
    }
    out["capacity_bytes"] = optional(rank.capacityBytes);
    out["device_name"] = optional(rank.deviceName);
    out["top_diagnosis"] = rank.topDiagnosisId ? nlohmann::ordered_json(diagnosisIdName(*rank.topDiagnosisId))
                                               : nlohmann::ordered_json(nullptr);
    out["group"] = rank.group >= 0 ? nlohmann::ordered_json(rank.group) : nlohmann::ordered_json(nullptr);
    out["notes"] = rank.notes;
    out["summary_file"]
        = rank.summaryFile.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rank.summaryFile);
    return out;
}

} // namespace

nlohmann::ordered_json jobToJson(const JobSummary& job)
{
    nlohmann::ordered_json out;
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (const RankSummary& rank : job.ranks)
        ranks.push_back(rankToJson(rank));
    out["ranks"] = std::move(ranks);
    out["imbalance"] = job.imbalance;
    const RankSummary* failing = job.failing();
    out["failing_rank"]
        = failing && failing->rank >= 0 ? nlohmann::ordered_json(failing->rank) : nlohmann::ordered_json(nullptr);
    out["failing_file"] = failing ? nlohmann::ordered_json(failing->file) : nlohmann::ordered_json(nullptr);
    out["failing_reason"] = failingReasonName(job.failingReason);
    out["oom_ranks"] = job.oomRanks;
    out["median_peak_allocated_bytes"] = job.medianPeakBytes;
    out["max_peak_allocated_bytes"] = job.maxPeakBytes;
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    for (const RankGroup& group : job.groups) {
        nlohmann::ordered_json entry;
        nlohmann::ordered_json members = nlohmann::ordered_json::array();
        for (size_t member : group.members) {
            const RankSummary& rank = job.ranks[member];
            members.push_back(rank.rank >= 0 ? nlohmann::ordered_json(rank.rank) : nlohmann::ordered_json(rank.file));
        }
        entry["ranks"] = std::move(members);
        entry["label"] = group.label;
        entry["min_peak_allocated_bytes"] = group.minPeakBytes;
        entry["max_peak_allocated_bytes"] = group.maxPeakBytes;
        entry["dominant_category"] = categoryName(group.dominantCategory);
        groups.push_back(std::move(entry));
    }
    out["groups"] = std::move(groups);
    out["group_tolerance"] = JobSummary::groupTolerance;
    out["notes"] = job.notes;
    out["workers"] = job.workers;
    out["from_summaries"] = job.fromSummaries;
    out["failing_snapshot_to_copy"] = job.failingSnapshotToCopy.empty()
        ? nlohmann::ordered_json(nullptr)
        : nlohmann::ordered_json(job.failingSnapshotToCopy);
    return out;
}

void addJobToJson(nlohmann::ordered_json& document, const JobSummary& job)
{
    nlohmann::ordered_json& inputs = document["inputs"];
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        const bool fromSummary = !rank.summaryFile.empty();
        if (job.failingRank && *job.failingRank == i && !fromSummary)
            continue; // already there, as the case's own input
        // A rank read from a summary was given as that file (its snapshot may be far away).
        inputs.push_back({ { "path", fromSummary ? rank.summaryFile : rank.file },
            { "kind", fromSummary ? "rank_summary" : "snapshot" },
            { "error", rank.readable() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rank.error) } });
    }
    document["job"] = jobToJson(job);
}

} // namespace oomlens
