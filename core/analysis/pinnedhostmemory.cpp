#include "core/analysis/pinnedhostmemory.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oomlens {

std::optional<PinnedHostTimeline::Point> PinnedHostTimeline::at(int64_t timeUs) const
{
    if (!hasTrace() || timeUs < points[1].timeUs)
        return std::nullopt;
    auto it = std::upper_bound(
        points.begin() + 1, points.end(), timeUs, [](int64_t time, const Point& point) { return time < point.timeUs; });
    return *(it - 1);
}

namespace {

// What the dump holds: its segments, what they reserve, and what their live blocks hold.
void readDump(const PinnedHostMemory& host, PinnedHostTimeline& timeline)
{
    timeline.segmentsAtDump = host.segments.size();
    for (const Segment& segment : host.segments) {
        timeline.reservedAtDump += segment.totalSize;
        uint64_t live = 0;
        for (uint32_t b = 0; b < segment.blockCount; ++b) {
            const Block& block = host.blocks[segment.firstBlock + b];
            if (block.state == BlockState::ActiveAllocated || block.state == BlockState::ActivePendingFree) {
                live += block.size;
                ++timeline.liveBlocksAtDump;
            }
        }
        timeline.allocatedAtDump += segment.allocatedSize > 0 ? segment.allocatedSize : live;
    }
}

// The trace replayed forward from zero: allocated and reserved bytes after each event, and the
// lowest each went.
struct RelativeLevels
{
    std::vector<std::pair<int64_t, int64_t>> afterEvent; // allocated, reserved
    int64_t allocated = 0, reserved = 0, lowestAllocated = 0, lowestReserved = 0;
};

RelativeLevels replayLevels(const PinnedHostMemory& host, PinnedHostTimeline& timeline)
{
    const bool freesComplete = std::any_of(host.events.begin(), host.events.end(),
        [](const TraceEvent& event) { return event.action == TraceAction::FreeCompleted; });
    std::unordered_map<uint64_t, uint64_t> live; // block address -> bytes
    RelativeLevels levels;
    levels.afterEvent.reserve(host.events.size());
    for (const TraceEvent& event : host.events) {
        switch (event.action) {
        case TraceAction::Alloc:
            live[event.addr] = event.size;
            levels.allocated += static_cast<int64_t>(event.size);
            ++timeline.allocEvents;
            break;
        case TraceAction::FreeRequested:
        case TraceAction::FreeCompleted:
        case TraceAction::Free:
            if (event.action == TraceAction::FreeRequested && freesComplete)
                break;
            if (auto it = live.find(event.addr); it != live.end()) {
                levels.allocated -= static_cast<int64_t>(it->second);
                live.erase(it);
            } else {
                levels.allocated -= static_cast<int64_t>(event.size); // allocated before the trace
            }
            break;
        case TraceAction::SegmentAlloc:
        case TraceAction::SegmentMap:
            levels.reserved += static_cast<int64_t>(event.size);
            break;
        case TraceAction::SegmentFree:
        case TraceAction::SegmentUnmap:
            levels.reserved -= static_cast<int64_t>(event.size);
            break;
        default:
            break;
        }
        levels.lowestAllocated = std::min(levels.lowestAllocated, levels.allocated);
        levels.lowestReserved = std::min(levels.lowestReserved, levels.reserved);
        levels.afterEvent.emplace_back(levels.allocated, levels.reserved);
    }
    return levels;
}

// The curve's points, lifted by what was there before the trace, and its peaks.
void placePoints(const PinnedHostMemory& host, const RelativeLevels& levels, PinnedHostTimeline& timeline)
{
    timeline.points.reserve(host.events.size() + 1);
    PinnedHostTimeline::Point start;
    start.allocated = timeline.olderAllocated;
    start.reserved = timeline.olderReserved;
    start.timeUs = host.events.empty() ? 0 : host.events.front().timeUs;
    timeline.points.push_back(start);
    timeline.peakAllocated = start.allocated;
    timeline.peakReserved = start.reserved;
    timeline.peakAllocatedTimeUs = start.timeUs;
    for (size_t i = 0; i < host.events.size(); ++i) {
        PinnedHostTimeline::Point point;
        point.event = static_cast<int64_t>(i);
        point.timeUs = host.events[i].timeUs;
        point.allocated
            = static_cast<uint64_t>(static_cast<int64_t>(timeline.olderAllocated) + levels.afterEvent[i].first);
        point.reserved
            = static_cast<uint64_t>(static_cast<int64_t>(timeline.olderReserved) + levels.afterEvent[i].second);
        if (point.allocated > timeline.peakAllocated) {
            timeline.peakAllocated = point.allocated;
            timeline.peakAllocatedEvent = point.event;
            timeline.peakAllocatedTimeUs = point.timeUs;
        }
        timeline.peakReserved = std::max(timeline.peakReserved, point.reserved);
        timeline.points.push_back(point);
    }
}

} // namespace

std::optional<PinnedHostTimeline> pinnedHostTimeline(const Snapshot& snapshot)
{
    if (!snapshot.hostMemory)
        return std::nullopt;
    const PinnedHostMemory& host = *snapshot.hostMemory;
    PinnedHostTimeline timeline;
    readDump(host, timeline);

    // Forward from zero; what the curve dips below zero, and what the dump holds beyond the
    // curve's end, was there before the trace.
    const RelativeLevels levels = replayLevels(host, timeline);
    auto older = [](int64_t lowest, int64_t final, uint64_t atDump) {
        const int64_t fromDump = static_cast<int64_t>(atDump) - final;
        return static_cast<uint64_t>(std::max<int64_t>({ 0, -lowest, fromDump }));
    };
    timeline.olderAllocated = older(levels.lowestAllocated, levels.allocated, timeline.allocatedAtDump);
    timeline.olderReserved = older(levels.lowestReserved, levels.reserved, timeline.reservedAtDump);

    placePoints(host, levels, timeline);
    if (!timeline.hasTrace()) {
        timeline.peakAllocated = timeline.allocatedAtDump;
        timeline.peakReserved = timeline.reservedAtDump;
    }
    return timeline;
}

} // namespace oomlens
