#include "core/profilercomparison.h"

namespace oomlens {

std::vector<ProfilerComparison> compareProfilerWithSnapshots(const Case& input, const CaseAnalysis& analysis)
{
    std::vector<ProfilerComparison> comparisons;
    const SnapshotAnalysis* snapshot = nullptr;
    int snapshotIndex = -1;
    for (size_t i = 0; i < analysis.snapshots.size() && !snapshot; ++i) {
        if (analysis.snapshots[i].primary()) {
            snapshot = &analysis.snapshots[i];
            snapshotIndex = static_cast<int>(i);
        }
    }
    if (!snapshot)
        return comparisons;
    const DeviceAnalysis& device = *snapshot->primary();
    for (size_t t = 0; t < input.profilerTimelines.size(); ++t) {
        const ProfilerTimeline::Point* peak = input.profilerTimelines[t].peak();
        if (!peak)
            continue;
        ProfilerComparison comparison;
        comparison.timelineIndex = t;
        comparison.snapshotIndex = snapshotIndex;
        comparison.snapshotDevice = snapshot->primaryDevice;
        comparison.snapshotPeakBytes = device.peakAllocatedBytes;
        comparison.profilerPeakBytes = static_cast<uint64_t>(std::max<int64_t>(peak->total(), 0));
        const auto mapped = toOomlensCategories(peak->bytes);
        for (int c = 0; c < categoryCount; ++c) {
            ProfilerComparisonRow row;
            row.category = static_cast<Category>(c);
            row.snapshotBytes = device.categoriesAtPeak[static_cast<size_t>(c)];
            row.profilerBytes = mapped[static_cast<size_t>(c)];
            for (int p = 0; p < profilerCategoryCount; ++p) {
                if (oomlensCategory(static_cast<ProfilerCategory>(p)) == row.category)
                    row.profilerSources.push_back(static_cast<ProfilerCategory>(p));
            }
            if (row.snapshotBytes > 0 || row.profilerBytes > 0)
                comparison.rows.push_back(std::move(row));
        }
        comparisons.push_back(std::move(comparison));
    }
    return comparisons;
}

} // namespace oomlens
