#include "core/analysis/reconstruction.h"

#include "core/analysis/addressmap.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace oomlens {

namespace {

constexpr uint64_t minBlockSize = 512;

const std::vector<TraceEvent>& deviceEvents(const Snapshot& snapshot, int32_t device)
{
    static const std::vector<TraceEvent> none;
    const DeviceTrace* trace = snapshot.trace(device);
    return trace ? trace->events : none;
}

void addWarning(DeviceAnalysis& out, size_t count, const std::string& what)
{
    if (count > 0)
        out.warnings.push_back(std::to_string(count) + " " + what);
}

// Allocations were created in event order, except the older-than-trace ones discovered at
// their free. Put those first (the documented order) and remap the event index.
void orderAllocations(DeviceAnalysis& out)
{
    const auto older = [&](const Allocation& a) { return a.allocEvent < 0; };
    // The usual case, a trace that saw every allocation from the start: nothing to move.
    if (std::is_partitioned(out.allocations.begin(), out.allocations.end(), older))
        return;
    std::vector<uint32_t> order(out.allocations.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_partition(order.begin(), order.end(), [&](uint32_t i) { return older(out.allocations[i]); });
    std::vector<int32_t> newIndex(order.size());
    std::vector<Allocation> sorted;
    sorted.reserve(order.size());
    for (uint32_t i : order) {
        newIndex[i] = static_cast<int32_t>(sorted.size());
        sorted.push_back(out.allocations[i]);
    }
    out.allocations.swap(sorted);
    for (int32_t& index : out.eventAllocation) {
        if (index >= 0)
            index = newIndex[static_cast<size_t>(index)];
    }
}

// reservedAfter holds, from the replay, the bytes reserved after each event relative to the
// start. The dump-time segments are the only state known for sure: they fix the start.
void reconstructReserved(const Snapshot& snapshot, int32_t device, const std::vector<TraceEvent>& events,
    int64_t finalDelta, int64_t minDelta, DeviceAnalysis& out)
{
    uint64_t reserved = 0;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device == device)
            reserved += segment.totalSize;
    }
    const int64_t initial = static_cast<int64_t>(reserved) - finalDelta;
    if (initial + std::min<int64_t>(minDelta, 0) >= 0) {
        out.initialReservedBytes = static_cast<uint64_t>(initial);
        for (uint64_t& after : out.reservedAfter)
            after = static_cast<uint64_t>(initial + static_cast<int64_t>(after));
        return;
    }
    // The trace reserves more than the dump holds somewhere: walk backwards from the dump,
    // undoing each segment event and stopping at zero, so the recent past stays exact.
    size_t underflows = 0;
    for (size_t i = events.size(); i-- > 0;) {
        out.reservedAfter[i] = reserved;
        const TraceEvent& e = events[i];
        switch (e.action) {
        case TraceAction::SegmentAlloc:
        case TraceAction::SegmentMap:
            if (e.size > reserved) {
                ++underflows;
                reserved = 0;
            } else {
                reserved -= e.size;
            }
            break;
        case TraceAction::SegmentFree:
        case TraceAction::SegmentUnmap:
            reserved += e.size;
            break;
        default:
            break;
        }
    }
    out.initialReservedBytes = reserved;
    addWarning(out, underflows, "segment events reserve more than the dump-time segments hold");
}

// Replays the trace's events into allocations: pairs each free with its allocation by address,
// and keeps the levels of requested bytes and reserved segments relative to the start.
class TraceReplay
{
public:
    explicit TraceReplay(DeviceAnalysis& out)
        : m_out(out)
    { }

    // Handles event i and returns the allocation it belongs to, or -1.
    int32_t replay(const TraceEvent& e, int64_t i)
    {
        switch (e.action) {
        case TraceAction::Alloc:
            return allocate(e, i);
        case TraceAction::FreeRequested:
            return requestFree(e, i);
        case TraceAction::FreeCompleted:
        case TraceAction::Free:
            return completeFree(e, i);
        case TraceAction::SegmentAlloc:
        case TraceAction::SegmentMap:
            segmentDelta += static_cast<int64_t>(e.size);
            return -1;
        case TraceAction::SegmentFree:
        case TraceAction::SegmentUnmap:
            segmentDelta -= static_cast<int64_t>(e.size);
            minSegmentDelta = std::min(minSegmentDelta, segmentDelta);
            return -1;
        default:
            return -1;
        }
    }

    // The dump-time blocks: exact rounded sizes for what is still open, and the allocations
    // that were alive before the trace began and never touched by it.
    void closeAtDump(const Snapshot& snapshot, int32_t device)
    {
        for (const Segment& segment : snapshot.segments) {
            if (segment.device != device)
                continue;
            for (uint32_t b = segment.firstBlock;
                 b < segment.firstBlock + segment.blockCount && b < snapshot.blocks.size(); ++b) {
                const Block& block = snapshot.blocks[b];
                if (block.state == BlockState::ActiveAllocated || block.state == BlockState::ActivePendingFree)
                    closeBlock(block, segment);
            }
        }
    }

    AddressMap open { 4096 };
    size_t reallocatedLive = 0;
    size_t freesBeforeTrace = 0;
    int64_t level = 0;
    uint64_t initial = 0;
    int64_t segmentDelta = 0, minSegmentDelta = 0;

private:
    int32_t allocate(const TraceEvent& e, int64_t i)
    {
        Allocation a;
        a.address = e.addr;
        a.requestedSize = e.size;
        a.blockSize = estimatedBlockSize(e.size); // exact for blocks that survive to the dump
        a.allocEvent = i;
        a.stack = e.stack;
        a.stream = e.stream;
        m_out.allocations.push_back(a);
        const auto index = static_cast<int32_t>(m_out.allocations.size() - 1);
        level += static_cast<int64_t>(e.size);
        // A live address allocated again means its free was skipped (skip_actions); like
        // memory_viz we keep the old allocation alive rather than invent a free.
        if (open.insert(e.addr, index) != AddressMap::none)
            ++reallocatedLive;
        return index;
    }

    int32_t requestFree(const TraceEvent& e, int64_t i)
    {
        int32_t index = open.find(e.addr);
        if (index < 0) {
            index = openOlder(e);
            open.insert(e.addr, index);
        }
        Allocation& a = m_out.allocations[static_cast<size_t>(index)];
        if (a.freeRequestedEvent < 0)
            a.freeRequestedEvent = i;
        return index;
    }

    int32_t completeFree(const TraceEvent& e, int64_t i)
    {
        int32_t index = open.erase(e.addr);
        if (index < 0)
            index = openOlder(e);
        Allocation& a = m_out.allocations[static_cast<size_t>(index)];
        a.freeEvent = i;
        if (a.freeRequestedEvent < 0)
            a.freeRequestedEvent = i;
        level -= static_cast<int64_t>(a.requestedSize);
        return index;
    }

    // A free whose allocation the trace never saw: it was alive before the trace began.
    int32_t openOlder(const TraceEvent& e)
    {
        Allocation a;
        a.address = e.addr;
        a.requestedSize = e.size;
        a.blockSize = estimatedBlockSize(e.size);
        a.stack = e.stack;
        a.stream = e.stream;
        m_out.allocations.push_back(a);
        ++freesBeforeTrace;
        initial += e.size;
        return static_cast<int32_t>(m_out.allocations.size() - 1);
    }

    void closeBlock(const Block& block, const Segment& segment)
    {
        const int32_t index = open.erase(block.address);
        if (index >= 0) {
            Allocation& a = m_out.allocations[static_cast<size_t>(index)];
            if (block.size)
                a.blockSize = block.size;
            if (a.stack == FrameTable::emptyStack())
                a.stack = block.stack;
            return;
        }
        Allocation a;
        a.address = block.address;
        a.requestedSize = block.requestedSize ? block.requestedSize : block.size;
        a.blockSize = block.size ? block.size : estimatedBlockSize(a.requestedSize);
        a.stack = block.stack;
        a.stream = segment.stream;
        m_out.allocations.push_back(a);
        initial += a.requestedSize;
    }

    DeviceAnalysis& m_out;
};

} // namespace

uint64_t estimatedBlockSize(uint64_t requested)
{
    if (requested < minBlockSize)
        return minBlockSize;
    return (requested + minBlockSize - 1) / minBlockSize * minBlockSize;
}

void reconstructTimeline(const Snapshot& snapshot, int32_t device, DeviceAnalysis& out)
{
    const std::vector<TraceEvent>& events = deviceEvents(snapshot, device);
    const auto n = static_cast<int64_t>(events.size());
    out.device = device;
    out.allocations.clear();
    out.allocations.reserve(events.size() / 2 + 16); // untouched capacity costs no memory
    out.eventAllocation.assign(events.size(), -1);
    // Requested bytes live after each event, relative to the start; the bytes live before the
    // trace (older allocations) are only known at the end and added then.
    out.allocatedAfter.resize(events.size());
    out.reservedAfter.resize(events.size());

    TraceReplay replay(out);
    for (int64_t i = 0; i < n; ++i) {
        const auto at = static_cast<size_t>(i);
        out.eventAllocation[at] = replay.replay(events[at], i);
        out.allocatedAfter[at] = static_cast<uint64_t>(replay.level);
        out.reservedAfter[at] = static_cast<uint64_t>(replay.segmentDelta);
    }
    replay.closeAtDump(snapshot, device);
    orderAllocations(out);

    out.initialAllocatedBytes = replay.initial;
    for (uint64_t& after : out.allocatedAfter) {
        const int64_t live = static_cast<int64_t>(after) + static_cast<int64_t>(replay.initial);
        after = static_cast<uint64_t>(std::max<int64_t>(live, 0));
    }

    reconstructReserved(snapshot, device, events, replay.segmentDelta, replay.minSegmentDelta, out);
    // Blocks alive since before the trace only say recording started late; a free whose alloc
    // is missing says the ring buffer overwrote the beginning.
    out.traceTruncated = replay.freesBeforeTrace > 0;
    addWarning(out, replay.reallocatedLive, "allocations at an address that was still live (frees skipped?)");
}

} // namespace oomlens
