#include "core/analysis/segmentmap.h"

#include <algorithm>
#include <iterator>

namespace oomlens {

namespace {

// Small-pool segments are always 2 MiB (kSmallBuffer); large-pool ones never are, since
// requests between 1 and 10 MiB get 20 MiB segments and larger ones exceed 2 MiB.
constexpr uint64_t smallSegmentSize = uint64_t(2) << 20;
// Expandable segments map whole pages: 2 MiB in the small pool, 20 MiB (kLargeBuffer) in the
// large one, and a small request never maps ten pages at once.
constexpr uint64_t largePageSize = uint64_t(20) << 20;

bool mergeable(const StateSegment& a, const StateSegment& b)
{
    return a.isExpandable && b.isExpandable && a.stream == b.stream && a.isLargePool == b.isLargePool;
}

// A mapped range continues the expandable segment it touches; a fresh one is told by its size.
bool mappedRangeIsLarge(const SegmentMap& map, uint64_t address, uint64_t size, int64_t stream)
{
    auto next = map.find(address + size);
    if (next != map.end() && next->second.isExpandable && next->second.stream == stream)
        return next->second.isLargePool;
    auto it = map.lower_bound(address);
    if (it != map.begin()) {
        const StateSegment& prev = std::prev(it)->second;
        if (prev.address + prev.size == address && prev.isExpandable && prev.stream == stream)
            return prev.isLargePool;
    }
    return size % largePageSize == 0;
}

void insertRange(SegmentMap& map, StateSegment segment, bool mergeAdjacent)
{
    if (mergeAdjacent) {
        auto next = map.find(segment.address + segment.size);
        if (next != map.end() && mergeable(next->second, segment)) {
            segment.size += next->second.size;
            map.erase(next);
        }
        auto it = map.lower_bound(segment.address);
        if (it != map.begin()) {
            auto prev = std::prev(it);
            if (prev->second.address + prev->second.size == segment.address && mergeable(prev->second, segment)) {
                prev->second.size += segment.size;
                return;
            }
        }
    }
    map[segment.address] = segment;
}

void removeRange(SegmentMap& map, uint64_t address, uint64_t size)
{
    auto it = segmentAt(map, address);
    if (it == map.end())
        return;
    StateSegment& s = it->second;
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

SegmentMap::iterator segmentAt(SegmentMap& map, uint64_t address)
{
    auto it = map.upper_bound(address);
    if (it == map.begin())
        return map.end();
    --it;
    return address < it->second.address + it->second.size ? it : map.end();
}

void applySegmentEvent(SegmentMap& map, const TraceEvent& e, bool undo)
{
    bool adds = false;
    switch (e.action) {
    case TraceAction::SegmentAlloc:
    case TraceAction::SegmentMap:
        adds = true;
        break;
    case TraceAction::SegmentFree:
    case TraceAction::SegmentUnmap:
        adds = false;
        break;
    default:
        return;
    }
    if (adds == undo) {
        removeRange(map, e.addr, e.size);
        return;
    }
    StateSegment s;
    s.address = e.addr;
    s.size = e.size;
    s.stream = e.stream;
    s.isExpandable = e.action == TraceAction::SegmentMap || e.action == TraceAction::SegmentUnmap;
    s.isLargePool = s.isExpandable ? mappedRangeIsLarge(map, e.addr, e.size, e.stream) : e.size != smallSegmentSize;
    insertRange(map, s, s.isExpandable);
}

SegmentMap segmentsAfter(const Snapshot& snapshot, int32_t device, int64_t event)
{
    SegmentMap map;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device != device)
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
    if (const DeviceTrace* trace = snapshot.trace(device)) {
        for (auto i = static_cast<int64_t>(trace->events.size()) - 1; i > event; --i)
            applySegmentEvent(map, trace->events[static_cast<size_t>(i)], true);
    }
    return map;
}

} // namespace oomlens
