#include "core/presentation/compileattribution.h"

#include "core/presentation/userframe.h"

#include <algorithm>
#include <map>

namespace oomlens {

CompileAttribution compileAttribution(
    const Snapshot& snapshot, const DeviceAnalysis& device, const Allocation& allocation)
{
    CompileAttribution result;
    if (const DeviceTrace* trace = snapshot.trace(device.device);
        trace && allocation.allocEvent >= 0 && static_cast<size_t>(allocation.allocEvent) < trace->events.size()) {
        const StringId context = trace->events[static_cast<size_t>(allocation.allocEvent)].compileContext;
        if (context.isValid())
            result.context = snapshot.strings->get(context);
    }
    if (allocation.stack.isValid()) {
        for (FrameId id : snapshot.frames->stack(allocation.stack)) {
            if (isCompilerGeneratedFile(snapshot.strings->get(snapshot.frames->frame(id).filename))) {
                result.generatedFrame = id;
                break;
            }
        }
    }
    return result;
}

std::string frameSiteText(const Snapshot& snapshot, FrameId frame)
{
    const Frame& f = snapshot.frames->frame(frame);
    return std::string(snapshot.strings->get(f.filename)) + ":" + std::to_string(f.line) + " "
        + std::string(snapshot.strings->get(f.name));
}

std::vector<CompiledRegion> compiledRegions(const Snapshot& snapshot, const DeviceAnalysis& device, size_t maxSites)
{
    std::map<std::string, CompiledRegion> byContext;
    std::map<std::string, std::map<std::string, uint64_t>> sites;
    for (const Allocation& allocation : device.allocations) {
        const CompileAttribution attribution = compileAttribution(snapshot, device, allocation);
        if (!attribution.compiled())
            continue;
        const std::string context(attribution.context);
        CompiledRegion& region = byContext[context];
        region.context = context;
        ++region.allocations;
        region.requestedBytes += allocation.requestedSize;
        region.largestBytes = std::max(region.largestBytes, allocation.requestedSize);
        if (const auto frame = userFrame(*snapshot.frames, *snapshot.strings, allocation.stack))
            sites[context][frameSiteText(snapshot, *frame)] += allocation.requestedSize;
    }
    std::vector<CompiledRegion> result;
    for (auto& [context, region] : byContext) {
        std::vector<std::pair<std::string, uint64_t>> ranked(sites[context].begin(), sites[context].end());
        std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
        if (ranked.size() > maxSites)
            ranked.resize(maxSites);
        region.topSites = std::move(ranked);
        result.push_back(std::move(region));
    }
    std::sort(result.begin(), result.end(),
        [](const CompiledRegion& a, const CompiledRegion& b) { return a.requestedBytes > b.requestedBytes; });
    return result;
}

} // namespace oomlens
