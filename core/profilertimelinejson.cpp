#include "core/profilertimelinejson.h"

#include "core/profilercomparison.h"

namespace oomlens {

using json = nlohmann::ordered_json;

namespace {

json comparisonToJson(const ProfilerComparison& comparison)
{
    json rows = json::array();
    for (const ProfilerComparisonRow& row : comparison.rows) {
        json sources = json::array();
        for (ProfilerCategory source : row.profilerSources)
            sources.push_back(profilerCategoryName(source));
        rows.push_back({ { "category", categoryName(row.category) }, { "snapshot_bytes", row.snapshotBytes },
            { "profiler_bytes", row.profilerBytes }, { "pytorch_categories", std::move(sources) } });
    }
    return json { { "snapshot", comparison.snapshotIndex }, { "snapshot_device", comparison.snapshotDevice },
        { "snapshot_peak_bytes", comparison.snapshotPeakBytes },
        { "profiler_peak_bytes", comparison.profilerPeakBytes }, { "categories", std::move(rows) } };
}

} // namespace

json profilerTimelinesToJson(const Case& input, const CaseAnalysis& analysis)
{
    const std::vector<ProfilerComparison> comparisons = compareProfilerWithSnapshots(input, analysis);
    json timelines = json::array();
    for (size_t t = 0; t < input.profilerTimelines.size(); ++t) {
        const ProfilerTimeline& timeline = input.profilerTimelines[t];
        const ProfilerTimeline::Point* peak = timeline.peak();
        json ours = json::object();
        json theirs = json::object();
        if (peak) {
            const auto mapped = toOomlensCategories(peak->bytes);
            for (int c = 0; c < categoryCount; ++c)
                ours[std::string(categoryName(static_cast<Category>(c)))] = mapped[static_cast<size_t>(c)];
            for (int p = 0; p < profilerCategoryCount; ++p)
                theirs[std::string(profilerCategoryName(static_cast<ProfilerCategory>(p)))]
                    = peak->bytes[static_cast<size_t>(p)];
        }
        json entry { { "path", timeline.path }, { "format", profilerTimelineFormatName(timeline.format) },
            { "device", timeline.device ? json(*timeline.device) : json(nullptr) }, { "events", timeline.events },
            { "points", timeline.points.size() }, { "first_time_us", timeline.firstTimeUs() },
            { "last_time_us", timeline.lastTimeUs() }, { "peak_bytes", peak ? std::max<int64_t>(peak->total(), 0) : 0 },
            { "peak_time_us", peak ? json(peak->timeUs) : json(nullptr) },
            { "preexisting_bytes", timeline.preexistingBytes }, { "categories_at_peak", std::move(ours) },
            { "pytorch_categories_at_peak", std::move(theirs) }, { "warnings", timeline.warnings },
            { "compared_with_snapshot", json(nullptr) } };
        for (const ProfilerComparison& comparison : comparisons) {
            if (comparison.timelineIndex == t)
                entry["compared_with_snapshot"] = comparisonToJson(comparison);
        }
        timelines.push_back(std::move(entry));
    }
    return timelines;
}

} // namespace oomlens
