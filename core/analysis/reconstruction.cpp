#include "core/analysis/reconstruction.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>

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
    std::vector<uint32_t> order(out.allocations.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_partition(order.begin(), order.end(),
                          [&](uint32_t i) { return out.allocations[i].allocEvent < 0; });
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

void reconstructReserved(const Snapshot& snapshot, int32_t device, const std::vector<TraceEvent>& events,
                         DeviceAnalysis& out)
{
    uint64_t reserved = 0;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device == device)
            reserved += segment.totalSize;
    }
    // Walk backwards from the dump, the only state we know for sure: undo each segment event.
    out.reservedAfter.assign(events.size(), 0);
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
    out.allocations.reserve(events.size() / 2 + 16);
    out.eventAllocation.assign(events.size(), -1);

    std::unordered_map<uint64_t, int32_t> open;
    open.reserve(4096);
    size_t reallocatedLive = 0;
    size_t freesBeforeTrace = 0;

    auto openOlder = [&](const TraceEvent& e) {
        Allocation a;
        a.address = e.addr;
        a.requestedSize = e.size;
        a.stack = e.stack;
        a.stream = e.stream;
        out.allocations.push_back(a);
        ++freesBeforeTrace;
        return static_cast<int32_t>(out.allocations.size() - 1);
    };

    for (int64_t i = 0; i < n; ++i) {
        const TraceEvent& e = events[static_cast<size_t>(i)];
        switch (e.action) {
        case TraceAction::Alloc: {
            Allocation a;
            a.address = e.addr;
            a.requestedSize = e.size;
            a.allocEvent = i;
            a.stack = e.stack;
            a.stream = e.stream;
            out.allocations.push_back(a);
            const auto index = static_cast<int32_t>(out.allocations.size() - 1);
            // A live address allocated again means its free was skipped (skip_actions); like
            // memory_viz we keep the old allocation alive rather than invent a free.
            auto [it, inserted] = open.try_emplace(e.addr, index);
            if (!inserted) {
                ++reallocatedLive;
                it->second = index;
            }
            out.eventAllocation[static_cast<size_t>(i)] = index;
            break;
        }
        case TraceAction::FreeRequested: {
            auto it = open.find(e.addr);
            int32_t index = it != open.end() ? it->second : -1;
            if (index < 0) {
                index = openOlder(e);
                open.emplace(e.addr, index);
            }
            Allocation& a = out.allocations[static_cast<size_t>(index)];
            if (a.freeRequestedEvent < 0)
                a.freeRequestedEvent = i;
            out.eventAllocation[static_cast<size_t>(i)] = index;
            break;
        }
        case TraceAction::FreeCompleted:
        case TraceAction::Free: {
            auto it = open.find(e.addr);
            int32_t index;
            if (it != open.end()) {
                index = it->second;
                open.erase(it);
            } else {
                index = openOlder(e);
            }
            Allocation& a = out.allocations[static_cast<size_t>(index)];
            a.freeEvent = i;
            if (a.freeRequestedEvent < 0)
                a.freeRequestedEvent = i;
            out.eventAllocation[static_cast<size_t>(i)] = index;
            break;
        }
        default:
            break;
        }
    }

    // The dump-time blocks: exact rounded sizes for what is still open, and the allocations
    // that were alive before the trace began and never touched by it.
    for (const Segment& segment : snapshot.segments) {
        if (segment.device != device)
            continue;
        for (uint32_t b = segment.firstBlock; b < segment.firstBlock + segment.blockCount && b < snapshot.blocks.size();
             ++b) {
            const Block& block = snapshot.blocks[b];
            if (block.state != BlockState::ActiveAllocated && block.state != BlockState::ActivePendingFree)
                continue;
            auto it = open.find(block.address);
            if (it != open.end()) {
                Allocation& a = out.allocations[static_cast<size_t>(it->second)];
                a.blockSize = block.size;
                if (a.stack == FrameTable::emptyStack())
                    a.stack = block.stack;
                open.erase(it);
                continue;
            }
            Allocation a;
            a.address = block.address;
            a.requestedSize = block.requestedSize ? block.requestedSize : block.size;
            a.blockSize = block.size;
            a.stack = block.stack;
            a.stream = segment.stream;
            out.allocations.push_back(a);
        }
    }
    for (Allocation& a : out.allocations) {
        if (a.blockSize == 0)
            a.blockSize = estimatedBlockSize(a.requestedSize);
    }
    orderAllocations(out);

    // Requested bytes live over the trace.
    std::vector<int64_t> delta(events.size() + 1, 0);
    uint64_t initial = 0;
    for (const Allocation& a : out.allocations) {
        if (a.allocEvent < 0)
            initial += a.requestedSize;
        else
            delta[static_cast<size_t>(a.allocEvent)] += static_cast<int64_t>(a.requestedSize);
        if (a.freeEvent >= 0)
            delta[static_cast<size_t>(a.freeEvent)] -= static_cast<int64_t>(a.requestedSize);
    }
    out.initialAllocatedBytes = initial;
    out.allocatedAfter.resize(events.size());
    auto level = static_cast<int64_t>(initial);
    for (size_t i = 0; i < events.size(); ++i) {
        level += delta[i];
        out.allocatedAfter[i] = static_cast<uint64_t>(std::max<int64_t>(level, 0));
    }

    reconstructReserved(snapshot, device, events, out);
    // Blocks alive since before the trace only say recording started late; a free whose alloc
    // is missing says the ring buffer overwrote the beginning.
    out.traceTruncated = freesBeforeTrace > 0;
    addWarning(out, reallocatedLive, "allocations at an address that was still live (frees skipped?)");
}

} // namespace oomlens
