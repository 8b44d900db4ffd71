#include "app/mcp/momentjson.h"

#include "core/analysis/livequery.h"
#include "core/analysis/series.h"
#include "core/presentation/stackframes.h"

#include <algorithm>

namespace oomlens::mcp {

namespace {

Json orNull(int64_t value, bool known)
{
    return known ? Json(value) : Json(nullptr);
}

} // namespace

Json momentToJson(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    const bool inTrace = event >= 0 && trace && static_cast<size_t>(event) < trace->events.size();
    const size_t at = static_cast<size_t>(event);
    const bool hasTime = inTrace && trace->events[at].timeUs != 0;
    const bool hasStep = inTrace && at < device.eventStep.size() && device.eventStep[at] >= 0;
    return Json {
        { "event", event },
        { "time_us", orNull(hasTime ? trace->events[at].timeUs : 0, hasTime) },
        { "phase",
            std::string(phaseName(inTrace && at < device.eventPhase.size() ? device.eventPhase[at] : Phase::Unknown)) },
        { "step", orNull(hasStep ? device.eventStep[at] : -1, hasStep) },
        { "allocated_bytes", allocatedAt(device, event) },
        { "reserved_bytes", reservedAt(device, event) },
    };
}

Json allocationToJson(const Snapshot& snapshot, const DeviceAnalysis& device, uint32_t index, StackFrames frames)
{
    const Allocation& a = device.allocations[index];
    return Json {
        { "allocation", index },
        { "bytes", a.requestedSize },
        { "block_bytes", a.blockSize },
        { "category", std::string(categoryName(a.category)) },
        { "reason", a.reason < device.reasons.size() ? Json(device.reasons[a.reason]) : Json(nullptr) },
        { "phase", std::string(phaseName(a.phase)) },
        { "step", orNull(a.step, a.step >= 0) },
        { "allocated_at_event", orNull(a.allocEvent, a.allocEvent >= 0) },
        { "freed_at_event", orNull(a.freeEvent, a.freeEvent >= 0) },
        { "stream", a.stream },
        { "address", a.address },
        { "stack", frames == StackFrames::All ? allFrameTexts(snapshot, a.stack) : userFrameTexts(snapshot, a.stack) },
    };
}

Json categoryBytesToJson(const CategoryBytes& bytes)
{
    Json object = Json::object();
    for (int i = 0; i < categoryCount; ++i)
        object[std::string(categoryName(static_cast<Category>(i)))] = bytes[static_cast<size_t>(i)];
    return object;
}

std::vector<uint32_t> largestLive(const DeviceAnalysis& device, int64_t event, size_t limit)
{
    std::vector<uint32_t> live = liveAllocations(device, event);
    const auto larger = [&](uint32_t x, uint32_t y) {
        const uint64_t bx = device.allocations[x].requestedSize;
        const uint64_t by = device.allocations[y].requestedSize;
        return bx != by ? bx > by : x < y;
    };
    const size_t kept = std::min(limit, live.size());
    std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(kept), live.end(), larger);
    live.resize(kept);
    return live;
}

} // namespace oomlens::mcp
