#include "core/analysis/compileattribution.h"

#include "core/analysis/userframe.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace oomlens {

namespace {

std::string_view compileContextOf(const Snapshot& snapshot, const DeviceAnalysis& device, const Allocation& allocation)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace || allocation.allocEvent < 0 || static_cast<size_t>(allocation.allocEvent) >= trace->events.size())
        return {};
    const StringId context = trace->events[static_cast<size_t>(allocation.allocEvent)].compileContext;
    return context.isValid() ? snapshot.strings->get(context) : std::string_view();
}

} // namespace

CompileAttribution compileAttribution(const Snapshot& snapshot, const DeviceAnalysis& device,
    const Allocation& allocation, const GeneratedCodeFrames& generated)
{
    CompileAttribution result;
    result.context = compileContextOf(snapshot, device, allocation);
    result.generatedFrame = generated.innermost(allocation.stack);
    return result;
}

CompileAttribution compileAttribution(
    const Snapshot& snapshot, const DeviceAnalysis& device, const Allocation& allocation)
{
    CompileAttribution result;
    result.context = compileContextOf(snapshot, device, allocation);
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

std::vector<CompiledRegion> compiledRegions(const Snapshot& snapshot, const DeviceAnalysis& device, size_t maxSites)
{
    const GeneratedCodeFrames generated(*snapshot.frames, *snapshot.strings);
    const DeviceTrace* trace = snapshot.trace(device.device);
    bool anyContext = false;
    if (trace) {
        anyContext = std::any_of(trace->events.begin(), trace->events.end(),
            [](const TraceEvent& event) { return event.compileContext.isValid(); });
    }
    // Neither a recorded compile_context nor a frame of generated code: nothing was compiled, and
    // the allocations need not be looked at (the common case, and a million of them at 1M events).
    if (!anyContext && !generated.any())
        return {};

    std::map<std::string, CompiledRegion> byContext;
    std::map<std::string, std::map<std::string, uint64_t>> sites;
    std::unordered_map<uint32_t, std::string> siteByStack; // a stack's user frame, named once
    for (const Allocation& allocation : device.allocations) {
        const CompileAttribution attribution = compileAttribution(snapshot, device, allocation, generated);
        if (!attribution.compiled())
            continue;
        const std::string context(attribution.context);
        CompiledRegion& region = byContext[context];
        region.context = context;
        ++region.allocations;
        region.requestedBytes += allocation.requestedSize;
        region.largestBytes = std::max(region.largestBytes, allocation.requestedSize);
        auto site = siteByStack.find(allocation.stack.value);
        if (site == siteByStack.end()) {
            const auto frame = userFrame(*snapshot.frames, *snapshot.strings, allocation.stack);
            site = siteByStack.emplace(allocation.stack.value, frame ? frameSiteText(snapshot, *frame) : std::string())
                       .first;
        }
        if (!site->second.empty())
            sites[context][site->second] += allocation.requestedSize;
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
