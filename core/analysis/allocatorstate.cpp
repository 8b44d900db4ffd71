#include "core/analysis/allocatorstate.h"

#include "core/analysis/segmentmap.h"

#include <algorithm>
#include <map>

namespace oomlens {

const StateSegment* AllocatorState::segmentAt(uint64_t address) const
{
    auto it = std::upper_bound(
        segments.begin(), segments.end(), address, [](uint64_t a, const StateSegment& s) { return a < s.address; });
    if (it == segments.begin())
        return nullptr;
    --it;
    return address < it->address + it->size ? &*it : nullptr;
}

uint64_t AllocatorState::largestFreeBlock(int64_t stream, bool largePool) const
{
    uint64_t best = 0;
    for (const StateSegment& s : segments) {
        if ((stream < 0 || s.stream == stream) && s.isLargePool == largePool)
            best = std::max(best, s.largestFree);
    }
    return best;
}

uint64_t AllocatorState::freeBytes(int64_t stream, bool largePool) const
{
    uint64_t total = 0;
    for (const StateSegment& s : segments) {
        if ((stream < 0 || s.stream == stream) && s.isLargePool == largePool)
            total += s.freeBytes;
    }
    return total;
}

std::vector<PoolState> AllocatorState::pools() const
{
    std::map<PoolKey, PoolState> byKey;
    for (const StateSegment& s : segments) {
        const PoolKey key { s.stream, s.isLargePool };
        PoolState& p = byKey[key];
        p.key = key;
        ++p.segments;
        p.reservedBytes += s.size;
        p.freeBytes += s.freeBytes;
        p.largestFreeBlock = std::max(p.largestFreeBlock, s.largestFree);
        for (const StateBlock& b : s.blocks)
            p.activeBytes += b.size;
    }
    std::vector<PoolState> result;
    result.reserve(byKey.size());
    for (auto& [key, pool] : byKey)
        result.push_back(pool);
    return result;
}

AllocatorState allocatorStateAt(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event)
{
    AllocatorState state;
    state.event = event;
    SegmentMap map = segmentsAfter(snapshot, device.device, event);

    for (size_t index = 0; index < device.allocations.size(); ++index) {
        const Allocation& a = device.allocations[index];
        if (!a.liveAfter(event))
            continue;
        auto it = segmentAt(map, a.address);
        if (it == map.end())
            continue;
        StateSegment& s = it->second;
        const bool pending = a.releasedBy(event);
        s.blocks.push_back({ a.address, a.blockSize, static_cast<int32_t>(index), pending });
    }

    state.segments.reserve(map.size());
    for (auto& [address, s] : map) {
        std::sort(s.blocks.begin(), s.blocks.end(),
            [](const StateBlock& x, const StateBlock& y) { return x.address < y.address; });
        uint64_t cursor = s.address;
        const uint64_t end = s.address + s.size;
        for (const StateBlock& b : s.blocks) {
            if (b.address > cursor) {
                s.freeBytes += b.address - cursor;
                s.largestFree = std::max(s.largestFree, b.address - cursor);
            }
            cursor = std::max(cursor, std::min(end, b.address + b.size));
            state.activeBytes += b.size;
        }
        if (end > cursor) {
            s.freeBytes += end - cursor;
            s.largestFree = std::max(s.largestFree, end - cursor);
        }
        state.reservedBytes += s.size;
        state.segments.push_back(std::move(s));
    }
    return state;
}

} // namespace oomlens
