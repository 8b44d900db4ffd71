#include "core/analysis/allocatorstate.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace oomlens {

namespace {

// Small-pool segments are always 2 MiB (kSmallBuffer); large-pool ones never are, since
// requests between 1 and 10 MiB get 20 MiB segments and larger ones exceed 2 MiB.
constexpr uint64_t smallSegmentSize = uint64_t(2) << 20;

using SegmentMap = std::map<uint64_t, StateSegment>;

void insertRange(SegmentMap& map, StateSegment segment, bool mergeAdjacent)
{
    if (mergeAdjacent) {
        auto next = map.find(segment.address + segment.size);
        if (next != map.end() && next->second.stream == segment.stream && next->second.isExpandable) {
            segment.size += next->second.size;
            map.erase(next);
        }
        auto it = map.lower_bound(segment.address);
        if (it != map.begin()) {
            auto prev = std::prev(it);
            if (prev->second.address + prev->second.size == segment.address && prev->second.stream == segment.stream
                && prev->second.isExpandable) {
                prev->second.size += segment.size;
                return;
            }
        }
    }
    map[segment.address] = segment;
}

// Undoes a segment_alloc/segment_map: the range did not exist before the event.
void removeRange(SegmentMap& map, uint64_t address, uint64_t size)
{
    auto it = map.upper_bound(address);
    if (it == map.begin())
        return;
    --it;
    StateSegment& s = it->second;
    if (address >= s.address + s.size)
        return;
    const uint64_t end = std::min(address + size, s.address + s.size);
    if (address == s.address && end == s.address + s.size) {
        map.erase(it);
        return;
    }
    StateSegment tail = s;
    const uint64_t oldEnd = s.address + s.size;
    s.size = address - s.address;
    if (end < oldEnd) {
        tail.address = end;
        tail.size = oldEnd - end;
        map[tail.address] = tail;
    }
    if (s.size == 0)
        map.erase(it);
}

} // namespace

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

AllocatorState allocatorStateAt(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event)
{
    AllocatorState state;
    state.event = event;
    SegmentMap map;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device != device.device)
            continue;
        StateSegment s;
        s.address = segment.address;
        s.size = segment.totalSize;
        s.stream = segment.stream;
        s.isLargePool = segment.isLargePool;
        s.isExpandable = segment.isExpandable;
        s.pool = segment.pool;
        map[s.address] = s;
    }

    const DeviceTrace* trace = snapshot.trace(device.device);
    if (trace) {
        for (int64_t i = static_cast<int64_t>(trace->events.size()) - 1; i > event; --i) {
            const TraceEvent& e = trace->events[static_cast<size_t>(i)];
            switch (e.action) {
            case TraceAction::SegmentAlloc:
            case TraceAction::SegmentMap:
                removeRange(map, e.addr, e.size);
                break;
            case TraceAction::SegmentFree:
            case TraceAction::SegmentUnmap: {
                StateSegment s;
                s.address = e.addr;
                s.size = e.size;
                s.stream = e.stream;
                s.isExpandable = e.action == TraceAction::SegmentUnmap;
                s.isLargePool = s.isExpandable || e.size != smallSegmentSize;
                insertRange(map, s, s.isExpandable);
                break;
            }
            default:
                break;
            }
        }
    }

    for (size_t index = 0; index < device.allocations.size(); ++index) {
        const Allocation& a = device.allocations[index];
        if (!a.liveAfter(event))
            continue;
        auto it = map.upper_bound(a.address);
        if (it == map.begin())
            continue;
        --it;
        StateSegment& s = it->second;
        if (a.address >= s.address + s.size)
            continue;
        const bool pending = a.freeRequestedEvent >= 0 && a.freeRequestedEvent <= event;
        s.blocks.push_back({a.address, a.blockSize, static_cast<int32_t>(index), pending});
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
