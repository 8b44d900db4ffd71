#include "core/diagnosis/batchscaling.h"

#include "core/analysis/allocatorstate.h"
#include "core/analysis/userframe.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <vector>

namespace oomlens {

namespace {

bool hasSite(const Snapshot& snapshot, StackId stack)
{
    return snapshot.frames && stack.isValid() && stack != FrameTable::emptyStack()
        && stack.value < snapshot.frames->stackCount() && !snapshot.frames->stack(stack).empty();
}

} // namespace

std::optional<BatchScaling> measureBatchScaling(const Snapshot& snapshot, const DeviceAnalysis& device,
    const DeviceProfile& profile, const StepProfile& failing, int64_t untilEvent)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace || failing.firstEvent <= 0 || untilEvent < failing.firstEvent
        || untilEvent >= static_cast<int64_t>(trace->events.size()))
        return std::nullopt;
    struct Largest
    {
        uint64_t bytes = 0;
        int64_t event = -1;
    };
    // Before the failing step: allocations, and frees of what the trace no longer shows allocated.
    std::unordered_map<uint32_t, Largest> before;
    for (int64_t i = 0; i < failing.firstEvent; ++i) {
        const TraceEvent& event = trace->events[static_cast<size_t>(i)];
        const bool sized = event.action == TraceAction::Alloc || event.action == TraceAction::FreeRequested
            || event.action == TraceAction::Free || event.action == TraceAction::FreeCompleted;
        if (!sized || !hasSite(snapshot, event.stack))
            continue;
        Largest& site = before[event.stack.value];
        site.bytes = std::max(site.bytes, event.size);
    }
    std::unordered_map<uint32_t, Largest> now;
    for (int64_t i = failing.firstEvent; i <= untilEvent; ++i) {
        const TraceEvent& event = trace->events[static_cast<size_t>(i)];
        if ((event.action != TraceAction::Alloc && event.action != TraceAction::Oom) || !hasSite(snapshot, event.stack))
            continue;
        Largest& site = now[event.stack.value];
        if (event.size > site.bytes)
            site = { event.size, i };
    }
    BatchScaling result;
    std::vector<std::pair<double, uint64_t>> ratios; // ratio, failing-step bytes
    uint64_t weight = 0;
    uint32_t largestStack = 0;
    for (const auto& [stack, site] : now) {
        const auto earlier = before.find(stack);
        if (earlier == before.end() || earlier->second.bytes == 0 || site.bytes == 0)
            continue;
        ++result.matchedSites;
        const double ratio = double(site.bytes) / double(earlier->second.bytes);
        ratios.emplace_back(ratio, site.bytes);
        weight += site.bytes;
        if (ratio >= 1.5) {
            ++result.grownSites;
            if (site.bytes > result.largestNowBytes) {
                result.largestNowBytes = site.bytes;
                result.largestBeforeBytes = earlier->second.bytes;
                result.largestNowEvent = site.event;
                largestStack = stack;
            }
        }
    }
    if (ratios.empty())
        return std::nullopt;
    std::sort(ratios.begin(), ratios.end());
    uint64_t seen = 0;
    for (const auto& [ratio, bytes] : ratios) {
        seen += bytes;
        if (2 * seen >= weight) {
            result.ratio = ratio;
            break;
        }
    }
    if (result.largestNowEvent >= 0) {
        result.largestStack = StackId(largestStack);
        result.largestWhere = userFrameLabel(snapshot, result.largestStack);
    }
    for (const StepProfile& step : profile.steps) {
        if (step.step < failing.step)
            result.earlierPeakDynamic = std::max(result.earlierPeakDynamic, step.peakDynamic);
    }
    return result;
}

std::optional<CacheBeforeStep> measureCacheBeforeStep(
    const Snapshot& snapshot, const DeviceAnalysis& device, const StepProfile& failing, int64_t untilEvent)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace || failing.firstEvent <= 0 || untilEvent < failing.firstEvent
        || untilEvent >= static_cast<int64_t>(trace->events.size()))
        return std::nullopt;
    const AllocatorState before = allocatorStateAt(snapshot, device, failing.firstEvent - 1);
    CacheBeforeStep result;
    result.reservedBytes = before.reservedBytes;
    for (const StateSegment& segment : before.segments) {
        if (segment.isLargePool)
            result.largestSegment = std::max(result.largestSegment, segment.size);
    }
    if (result.largestSegment == 0)
        return result;
    // Requests of the failing step (the failing one included) that no cached segment could hold
    // even at two thirds of their size, by call stack; a frameless request counts as one site.
    std::set<uint32_t> sites;
    for (int64_t i = failing.firstEvent; i <= untilEvent; ++i) {
        const TraceEvent& event = trace->events[static_cast<size_t>(i)];
        if (event.action != TraceAction::Alloc && event.action != TraceAction::Oom)
            continue;
        if (2 * event.size < 3 * result.largestSegment)
            continue;
        sites.insert(event.stack.value);
        if (event.size > result.largestRequest) {
            result.largestRequest = event.size;
            result.largestRequestEvent = i;
        }
    }
    result.outgrowingSites = static_cast<int>(sites.size());
    return result;
}

} // namespace oomlens
