#include "core/analysis/topsites.h"

#include "core/analysis/userframe.h"

#include <algorithm>
#include <unordered_map>

namespace oomlens {

std::vector<std::pair<std::string, uint64_t>> topSitesAtPeak(
    const Snapshot& snapshot, const DeviceAnalysis& device, size_t limit)
{
    if (!snapshot.frames || !snapshot.strings)
        return {};
    // Each stack's frame is looked up once.
    std::unordered_map<uint32_t, std::string> siteOfStack;
    std::unordered_map<std::string, uint64_t> bytesBySite;
    for (const Allocation& allocation : device.allocations) {
        if (!allocation.liveAfter(device.peakEvent))
            continue;
        auto [site, added] = siteOfStack.try_emplace(allocation.stack.value);
        if (added) {
            const std::optional<FrameId> frame = userFrame(*snapshot.frames, *snapshot.strings, allocation.stack);
            site->second = frame ? frameSiteText(snapshot, *frame) : std::string("(no stack)");
        }
        bytesBySite[site->second] += allocation.requestedSize;
    }
    std::vector<std::pair<std::string, uint64_t>> sites(bytesBySite.begin(), bytesBySite.end());
    const size_t kept = std::min(sites.size(), limit);
    std::partial_sort(sites.begin(), sites.begin() + static_cast<std::ptrdiff_t>(kept), sites.end(),
        [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    sites.resize(kept);
    return sites;
}

} // namespace oomlens
