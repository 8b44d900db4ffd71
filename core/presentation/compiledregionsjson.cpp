#include "core/presentation/compiledregionsjson.h"

#include "core/analysis/compileattribution.h"

namespace oomlens {

using json = nlohmann::ordered_json;

json compiledRegionsToJson(const CaseAnalysis& analysis)
{
    json all = json::array();
    for (const SnapshotAnalysis& snapshot : analysis.snapshots) {
        const DeviceAnalysis* device = snapshot.primary();
        if (!snapshot.snapshot || !device) {
            all.push_back(nullptr);
            continue;
        }
        json regions = json::array();
        for (const CompiledRegion& region : compiledRegions(*snapshot.snapshot, *device)) {
            json sites = json::array();
            for (const auto& [site, bytes] : region.topSites)
                sites.push_back({ { "site", site }, { "requested_bytes", bytes } });
            regions.push_back({ { "compile_context", region.context.empty() ? json(nullptr) : json(region.context) },
                { "allocations", region.allocations }, { "requested_bytes", region.requestedBytes },
                { "largest_bytes", region.largestBytes }, { "sites", std::move(sites) } });
        }
        all.push_back(std::move(regions));
    }
    return all;
}

} // namespace oomlens
