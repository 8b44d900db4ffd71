#include "core/analysis/pendingfrees.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace oomlens {

namespace {

int64_t failingStepStart(const DeviceAnalysis& device, const OomAnalysis& oom)
{
    if (oom.step < 0)
        return 0;
    for (size_t e = 0; e < device.eventStep.size(); ++e) {
        if (device.eventStep[e] == oom.step)
            return static_cast<int64_t>(e);
    }
    return 0;
}

// What the allocator held back at the dump: blocks whose free waits on a stream's events.
void countDumpPending(const Snapshot& snapshot, int32_t device, PendingFrees& out)
{
    for (size_t s = 0; s < snapshot.segments.size(); ++s) {
        const Segment& segment = snapshot.segments[s];
        if (segment.device != device)
            continue;
        for (uint32_t b = 0; b < segment.blockCount; ++b) {
            const Block& block = snapshot.blocks[segment.firstBlock + b];
            if (block.state == BlockState::ActivePendingFree) {
                ++out.dumpPendingBlocks;
                out.dumpPendingBytes += block.size;
            }
        }
    }
}

// Every free that waited, from the request to its completion, in the order they were requested.
void collectWindows(const DeviceTrace* trace, const DeviceAnalysis& device, size_t eventCount, PendingFrees& out)
{
    for (size_t i = 0; i < device.allocations.size(); ++i) {
        const Allocation& a = device.allocations[i];
        if (!a.freeWaited() || static_cast<size_t>(a.freeRequestedEvent) >= eventCount)
            continue;
        PendingFreeWindow w;
        w.allocation = static_cast<int32_t>(i);
        w.requestedEvent = a.freeRequestedEvent;
        w.completedEvent = a.freeEvent;
        w.bytes = a.blockSize ? a.blockSize : a.requestedSize;
        w.stream = a.stream;
        w.releasedBy = trace->events[static_cast<size_t>(a.freeRequestedEvent)].stack;
        out.windows.push_back(w);
    }
    std::sort(out.windows.begin(), out.windows.end(),
        [](const PendingFreeWindow& x, const PendingFreeWindow& y) { return x.requestedEvent < y.requestedEvent; });
}

// The windows that open and close at each event.
struct WindowEdges
{
    std::vector<std::vector<size_t>> starts, ends;
};

WindowEdges windowEdges(const PendingFrees& out, size_t eventCount)
{
    WindowEdges edges { std::vector<std::vector<size_t>>(eventCount), std::vector<std::vector<size_t>>(eventCount) };
    for (size_t w = 0; w < out.windows.size(); ++w) {
        edges.starts[static_cast<size_t>(out.windows[w].requestedEvent)].push_back(w);
        if (out.windows[w].completedEvent >= 0)
            edges.ends[static_cast<size_t>(out.windows[w].completedEvent)].push_back(w);
    }
    return edges;
}

// The events of the failing step up to the last OOM (the whole trace when there is no OOM).
struct FailingStep
{
    int64_t start = 0;
    int64_t lastOom = -1;
    bool contains(size_t e) const
    {
        return static_cast<int64_t>(e) >= start && (lastOom < 0 || static_cast<int64_t>(e) <= lastOom);
    }
};

// A segment reserved while frees were pending: memory the pending blocks of its stream could
// have served once they completed.
void countSegmentWhilePending(const TraceEvent& event, size_t e, uint64_t total, uint64_t pendingOnStream,
    const FailingStep& failing, PendingFrees& out)
{
    if (total > 0) {
        ++out.segmentsWhilePending;
        out.reservedWhilePendingBytes += event.size;
    }
    const uint64_t coverable = std::min(pendingOnStream, event.size);
    out.coverableWhilePendingBytes += coverable;
    if (failing.contains(e))
        out.coverableInFailingStepBytes += coverable;
}

// Sweep the trace: what is pending after each event, in total and per stream (a pending block
// can serve only requests of its own stream once it completes).
void sweepPending(const DeviceTrace& trace, const WindowEdges& edges, const FailingStep& failing, size_t eventCount,
    PendingFrees& out)
{
    std::map<int64_t, uint64_t> perStream;
    uint64_t total = 0;
    out.pendingAfter.assign(eventCount, 0);
    for (size_t e = 0; e < eventCount; ++e) {
        const TraceEvent& event = trace.events[e];
        if (event.action == TraceAction::SegmentAlloc || event.action == TraceAction::SegmentMap)
            countSegmentWhilePending(event, e, total, perStream[event.stream], failing, out);
        for (size_t w : edges.ends[e]) {
            total -= out.windows[w].bytes;
            perStream[out.windows[w].stream] -= out.windows[w].bytes;
        }
        for (size_t w : edges.starts[e]) {
            total += out.windows[w].bytes;
            perStream[out.windows[w].stream] += out.windows[w].bytes;
        }
        out.pendingAfter[e] = total;
        if (total > out.maxPendingBytes) {
            out.maxPendingBytes = total;
            out.maxPendingEvent = static_cast<int64_t>(e);
        }
        if (failing.contains(e) && total > out.maxPendingInFailingStepBytes) {
            out.maxPendingInFailingStepBytes = total;
            out.maxPendingInFailingStepEvent = static_cast<int64_t>(e);
        }
    }
}

// The failing malloc synchronizes on every pending event and releases cached segments
// before it records the oom: the completions in that run are what was held until then.
uint64_t releasedAtOom(const DeviceTrace& trace, const WindowEdges& edges, int64_t lastOom, const PendingFrees& out)
{
    uint64_t released = 0;
    for (int64_t e = lastOom - 1; e >= 0; --e) {
        const TraceEvent& event = trace.events[static_cast<size_t>(e)];
        if (event.action == TraceAction::SegmentFree || event.action == TraceAction::SegmentUnmap)
            continue;
        if (event.action != TraceAction::FreeCompleted)
            break;
        for (size_t w : edges.ends[static_cast<size_t>(e)])
            released += out.windows[w].bytes;
    }
    return released;
}

// The five stacks that released the most pending bytes.
void rankReleasers(PendingFrees& out)
{
    std::unordered_map<uint32_t, PendingReleaser> byStack;
    for (const PendingFreeWindow& w : out.windows) {
        PendingReleaser& r = byStack[w.releasedBy.value];
        r.stack = w.releasedBy;
        r.bytes += w.bytes;
        ++r.windows;
    }
    for (auto& [stack, releaser] : byStack)
        out.releasers.push_back(releaser);
    std::sort(out.releasers.begin(), out.releasers.end(), [](const PendingReleaser& x, const PendingReleaser& y) {
        return x.bytes != y.bytes ? x.bytes > y.bytes : x.stack.value < y.stack.value;
    });
    if (out.releasers.size() > 5)
        out.releasers.resize(5);
}

} // namespace

PendingFrees pendingFrees(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    PendingFrees out;
    countDumpPending(snapshot, device.device, out);
    const DeviceTrace* trace = snapshot.trace(device.device);
    const size_t eventCount = trace ? trace->events.size() : 0;
    collectWindows(trace, device, eventCount, out);
    if (out.windows.empty())
        return out;

    const WindowEdges edges = windowEdges(out, eventCount);
    FailingStep failing;
    failing.lastOom = device.ooms.empty() ? -1 : device.ooms.back().eventIndex;
    failing.start = device.ooms.empty() ? 0 : failingStepStart(device, device.ooms.back());
    sweepPending(*trace, edges, failing, eventCount, out);
    out.atPeakBytes = out.pendingAt(device.peakEvent);
    if (failing.lastOom >= 0) {
        out.atOomBytes = out.pendingAt(failing.lastOom);
        out.releasedAtOomBytes += releasedAtOom(*trace, edges, failing.lastOom, out);
    }
    rankReleasers(out);
    return out;
}

} // namespace oomlens
