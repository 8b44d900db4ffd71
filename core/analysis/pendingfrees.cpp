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

} // namespace

PendingFrees pendingFrees(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    PendingFrees out;
    for (size_t s = 0; s < snapshot.segments.size(); ++s) {
        const Segment& segment = snapshot.segments[s];
        if (segment.device != device.device)
            continue;
        for (uint32_t b = 0; b < segment.blockCount; ++b) {
            const Block& block = snapshot.blocks[segment.firstBlock + b];
            if (block.state == BlockState::ActivePendingFree) {
                ++out.dumpPendingBlocks;
                out.dumpPendingBytes += block.size;
            }
        }
    }

    const DeviceTrace* trace = snapshot.trace(device.device);
    const size_t eventCount = trace ? trace->events.size() : 0;
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
    if (out.windows.empty())
        return out;

    // Sweep the trace: what is pending after each event, in total and per stream (a pending block
    // can serve only requests of its own stream once it completes).
    std::vector<std::vector<size_t>> starts(eventCount), ends(eventCount);
    for (size_t w = 0; w < out.windows.size(); ++w) {
        starts[static_cast<size_t>(out.windows[w].requestedEvent)].push_back(w);
        if (out.windows[w].completedEvent >= 0)
            ends[static_cast<size_t>(out.windows[w].completedEvent)].push_back(w);
    }
    const int64_t lastOom = device.ooms.empty() ? -1 : device.ooms.back().eventIndex;
    const int64_t stepStart = device.ooms.empty() ? 0 : failingStepStart(device, device.ooms.back());
    std::map<int64_t, uint64_t> perStream;
    uint64_t total = 0;
    out.pendingAfter.assign(eventCount, 0);
    for (size_t e = 0; e < eventCount; ++e) {
        const TraceEvent& event = trace->events[e];
        if (event.action == TraceAction::SegmentAlloc || event.action == TraceAction::SegmentMap) {
            const uint64_t pendingOnStream = perStream[event.stream];
            if (total > 0) {
                ++out.segmentsWhilePending;
                out.reservedWhilePendingBytes += event.size;
            }
            const uint64_t coverable = std::min(pendingOnStream, event.size);
            out.coverableWhilePendingBytes += coverable;
            if (static_cast<int64_t>(e) >= stepStart && (lastOom < 0 || static_cast<int64_t>(e) <= lastOom))
                out.coverableInFailingStepBytes += coverable;
        }
        for (size_t w : ends[e]) {
            total -= out.windows[w].bytes;
            perStream[out.windows[w].stream] -= out.windows[w].bytes;
        }
        for (size_t w : starts[e]) {
            total += out.windows[w].bytes;
            perStream[out.windows[w].stream] += out.windows[w].bytes;
        }
        out.pendingAfter[e] = total;
        if (total > out.maxPendingBytes) {
            out.maxPendingBytes = total;
            out.maxPendingEvent = static_cast<int64_t>(e);
        }
        if (static_cast<int64_t>(e) >= stepStart && (lastOom < 0 || static_cast<int64_t>(e) <= lastOom)
            && total > out.maxPendingInFailingStepBytes) {
            out.maxPendingInFailingStepBytes = total;
            out.maxPendingInFailingStepEvent = static_cast<int64_t>(e);
        }
    }
    out.atPeakBytes = out.pendingAt(device.peakEvent);
    if (lastOom >= 0) {
        out.atOomBytes = out.pendingAt(lastOom);
        // The failing malloc synchronizes on every pending event and releases cached segments
        // before it records the oom: the completions in that run are what was held until then.
        for (int64_t e = lastOom - 1; e >= 0; --e) {
            const TraceEvent& event = trace->events[static_cast<size_t>(e)];
            if (event.action == TraceAction::SegmentFree || event.action == TraceAction::SegmentUnmap)
                continue;
            if (event.action != TraceAction::FreeCompleted)
                break;
            for (size_t w : ends[static_cast<size_t>(e)])
                out.releasedAtOomBytes += out.windows[w].bytes;
        }
    }

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
    return out;
}

} // namespace oomlens
