#include "core/compare/comparisonjson.h"

namespace oomlens {

namespace {

using Json = nlohmann::ordered_json;

template <typename Bytes> Json categoriesJson(const std::array<Bytes, categoryCount>& bytes)
{
    Json out = Json::object();
    for (int c = 0; c < categoryCount; ++c)
        out[std::string(categoryName(static_cast<Category>(c)))] = bytes[static_cast<size_t>(c)];
    return out;
}

Json stepJson(int32_t step)
{
    return step >= 0 ? Json(step) : Json(nullptr);
}

Json momentJson(const ComparedMoment& moment)
{
    return Json { { "event", moment.event }, { "time_us", moment.timeUs },
        { "phase", std::string(phaseName(moment.phase)) }, { "step", stepJson(moment.step) },
        { "allocated_bytes", moment.allocatedBytes }, { "categories", categoriesJson(moment.categories) } };
}

Json sideJson(const ComparisonSide& side)
{
    Json window = nullptr;
    if (side.window)
        window = Json { { "first_step", side.window->firstStep }, { "last_step", side.window->lastStep } };
    return Json { { "label", side.label }, { "device", side.device }, { "whole_trace", side.wholeTrace },
        { "window", std::move(window) }, { "peak_allocated_bytes", side.peak.allocatedBytes },
        { "categories_at_peak", categoriesJson(side.peak.categories) }, { "peak_event", side.peak.event },
        { "peak_time_us", side.peak.timeUs }, { "peak_phase", std::string(phaseName(side.peak.phase)) },
        { "peak_step", stepJson(side.peak.step) }, { "peak_reserved_bytes", side.peakReservedBytes },
        { "oom", side.oom ? momentJson(*side.oom) : Json(nullptr) },
        { "total_allocated_bytes", side.totalAllocatedBytes }, { "first_event", side.firstEvent },
        { "last_event", side.lastEvent }, { "duration_us", side.durationUs }, { "steps", side.stepCount } };
}

std::string_view siteStatus(const ComparedSite& site)
{
    if (site.isNew())
        return "new";
    if (site.vanished())
        return "vanished";
    return "both";
}

Json keyFields(const SiteKey& key)
{
    return Json { { "stack", key.frames }, { "category", std::string(categoryName(key.category)) },
        { "phase", std::string(phaseName(key.phase)) } };
}

} // namespace

nlohmann::ordered_json comparisonToJson(const Comparison& comparison)
{
    Json sites = Json::array();
    for (const ComparedSite& site : comparison.sites) {
        Json entry = keyFields(site.key);
        entry["a_bytes"] = site.a.peakBytes;
        entry["b_bytes"] = site.b.peakBytes;
        entry["delta_bytes"] = site.peakDelta();
        entry["a_count"] = site.a.peakCount;
        entry["b_count"] = site.b.peakCount;
        entry["a_allocated_bytes"] = site.a.allocatedBytes;
        entry["b_allocated_bytes"] = site.b.allocatedBytes;
        entry["allocated_delta_bytes"] = site.allocatedDelta();
        entry["status"] = siteStatus(site);
        sites.push_back(std::move(entry));
    }
    Json surviving = nullptr;
    if (comparison.windows) {
        surviving = Json::array();
        for (const SurvivingSite& site : comparison.surviving) {
            Json entry = keyFields(site.key);
            entry["bytes"] = site.bytes;
            entry["count"] = site.count;
            entry["second_window_bytes"] = site.secondWindowBytes;
            entry["repeats"] = site.repeats;
            surviving.push_back(std::move(entry));
        }
    }
    Json compare { { "a", sideJson(comparison.a) }, { "b", sideJson(comparison.b) },
        { "categories_delta", categoriesJson(comparison.categoriesDeltaAtPeak) },
        { "categories_delta_at_oom",
            comparison.categoriesDeltaAtOom ? categoriesJson(*comparison.categoriesDeltaAtOom) : Json(nullptr) },
        { "peak_delta_bytes",
            static_cast<int64_t>(comparison.b.peak.allocatedBytes)
                - static_cast<int64_t>(comparison.a.peak.allocatedBytes) },
        { "windows", comparison.windows }, { "sites", std::move(sites) }, { "new_sites", comparison.newSites().size() },
        { "vanished_sites", comparison.vanishedSites().size() }, { "surviving", std::move(surviving) },
        { "surviving_bytes", comparison.survivingBytes }, { "timeline_step_aligned", comparison.timeline.stepAligned },
        { "summary", comparison.summary } };
    return Json { { "tool", "oomlens" }, { "version", OOMLENS_VERSION }, { "compare", std::move(compare) } };
}

} // namespace oomlens
