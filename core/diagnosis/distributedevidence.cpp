#include "core/diagnosis/distributedevidence.h"

#include "core/analysis/allocatorstate.h"
#include "core/analysis/distributedstacks.h"
#include "core/analysis/privatepools.h"
#include "core/analysis/userframe.h"
#include "core/units.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oomlens {

namespace {

void measureCheckpointing(const DeviceAnalysis& device, DistributedStacks& stacks, DistributedEvidence& out)
{
    std::vector<std::pair<int64_t, int64_t>> deltas; // (event, +/- bytes) of recomputed allocations
    for (const Allocation& a : device.allocations) {
        if (a.stack == FrameTable::emptyStack())
            continue;
        out.checkpointing |= stacks.checkpointing(a.stack);
        if (!stacks.recompute(a.stack) || a.olderThanTrace())
            continue;
        out.recomputedBytes += a.requestedSize;
        ++out.recomputedAllocations;
        deltas.emplace_back(a.allocEvent, static_cast<int64_t>(a.requestedSize));
        if (a.freeEvent >= 0)
            deltas.emplace_back(a.freeEvent, -static_cast<int64_t>(a.requestedSize));
    }
    std::sort(deltas.begin(), deltas.end());
    int64_t level = 0;
    for (size_t i = 0; i < deltas.size(); ++i) {
        level += deltas[i].second;
        const bool lastOfEvent = i + 1 == deltas.size() || deltas[i + 1].first != deltas[i].first;
        if (lastOfEvent && level > static_cast<int64_t>(out.recomputePeakBytes)) {
            out.recomputePeakBytes = static_cast<uint64_t>(level);
            out.recomputePeakEvent = deltas[i].first;
        }
    }
    if (!out.checkpointing)
        return;
    out.checkpointingText = out.recomputedAllocations > 0
        ? "activation checkpointing frames recompute " + formatBytes(out.recomputedBytes) + " in "
            + std::to_string(out.recomputedAllocations) + " allocations inside backward, at most "
            + formatBytes(out.recomputePeakBytes) + " at once"
        : "activation checkpointing frames (torch.utils.checkpoint or a wrapper of it) are in the stacks";
}

// The innermost Python frame: the line of the program (or framework) that made the buffer; the
// frames inside it are the allocator's and the operator's, the same for every buffer.
std::optional<FrameId> innermostPythonFrame(const Snapshot& snapshot, StackId stack)
{
    for (FrameId id : snapshot.frames->stack(stack)) {
        if (isPythonFile(snapshot.strings->get(snapshot.frames->frame(id).filename)))
            return id;
    }
    return std::nullopt;
}

void measureCommunication(const Snapshot& snapshot, const DeviceAnalysis& device, const OomAnalysis& oom,
    DistributedStacks& stacks, DistributedEvidence& out)
{
    if (oom.stack != FrameTable::emptyStack())
        out.requestKind = stacks.communication(oom.stack);
    std::vector<uint64_t> others;
    std::unordered_map<uint32_t, size_t> perLine; // innermost Python frame -> live buffers
    std::map<CollectiveFramework, uint64_t> perFramework;
    for (const Allocation& a : device.allocations) {
        if (a.category != Category::Communication || !a.liveAfter(oom.eventIndex))
            continue;
        ++out.communicationBuffers;
        out.communicationBytes += a.requestedSize;
        perFramework[stacks.framework(a.stack)] += a.requestedSize;
        switch (stacks.communication(a.stack)) {
        case CommunicationKind::DdpBucket:
            out.ddpBucketBytes += a.requestedSize;
            break;
        case CommunicationKind::ZeroIpgBuffer:
            out.ipgBufferBytes += a.requestedSize;
            others.push_back(a.requestedSize);
            break;
        case CommunicationKind::DeferredGradient:
            out.deferredGradientBytes += a.requestedSize;
            ++out.deferredGradients;
            others.push_back(a.requestedSize);
            break;
        default:
            others.push_back(a.requestedSize);
            break;
        }
        if (const auto frame = innermostPythonFrame(snapshot, a.stack))
            ++perLine[frame->value];
    }
    uint64_t most = 0;
    for (const auto& [framework, bytes] : perFramework) {
        if (framework != CollectiveFramework::Unknown && bytes > most) {
            most = bytes;
            out.communicationFramework = framework;
        }
    }
    std::sort(others.begin(), others.end(), std::greater<>());
    for (size_t i = 0; i < std::min<size_t>(2, others.size()); ++i)
        out.inFlightBytes += others[i];
    for (const auto& [frame, count] : perLine) {
        if (count <= out.buffersPerLine)
            continue;
        out.buffersPerLine = count;
        const Frame& f = snapshot.frames->frame(FrameId(frame));
        out.topLineText = std::string(snapshot.strings->get(f.filename)) + ":"
            + std::string(snapshot.strings->get(f.name)) + ":" + std::to_string(f.line);
    }
}

// The pool the failing request's stream was allocating into (DistributedEvidence::capturingPool).
// While a capture on a stream is underway, CUDACachingAllocator's get_pool sends every request on
// it to the capture's private pool; the dedicated side stream torch.cuda.graph captures on is
// otherwise unused, so a stream holding no default-pool segment at all, whose latest allocation
// went into a graph's pool, was still capturing when its next request failed.
void findCapturingPool(
    const DeviceTrace& trace, const OomAnalysis& oom, const AllocatorState& state, DistributedEvidence& out)
{
    if (oom.eventIndex <= 0 || static_cast<size_t>(oom.eventIndex) > trace.events.size())
        return;
    for (int64_t e = oom.eventIndex - 1; e >= 0; --e) {
        const TraceEvent& event = trace.events[static_cast<size_t>(e)];
        if (event.action != TraceAction::Alloc || event.stream != oom.stream)
            continue;
        const StateSegment* segment = state.segmentAt(event.addr);
        if (!segment || segment->pool.isDefault())
            return;
        // Before PyTorch 2.5 graph_pool_handle() made (0, N) ids, as MemPools do now; cudagraph trees
        // capture every graph into one such pool. With capture frames on the failing request, that
        // pool is the capture's; without them only a graph's own (N, 0) id says so.
        const bool graphPool = poolOwner(segment->pool) == PoolOwner::CudaGraph;
        if (!graphPool && !out.oomInCapture)
            return;
        const bool streamHasDefault = std::any_of(state.segments.begin(), state.segments.end(),
            [&](const StateSegment& s) { return s.stream == oom.stream && poolOwner(s.pool) != PoolOwner::CudaGraph; });
        // Frames that show the capture make the stream's other segments no objection.
        out.captureSeenByPool = graphPool && !streamHasDefault;
        if (out.captureSeenByPool || out.oomInCapture) {
            out.capturingPool = segment->pool;
            out.capturingPoolEvent = e;
        }
        return;
    }
}

void measureGraphs(const Snapshot& snapshot, const DeviceAnalysis& device, const OomAnalysis& oom,
    const AllocatorState& state, DistributedStacks& stacks, DistributedEvidence& out)
{
    out.oomInCapture = oom.stack != FrameTable::emptyStack() && stacks.graphCapture(oom.stack);
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!out.oomInCapture && oom.stack == FrameTable::emptyStack() && trace) {
        // An oom entry without frames: the allocation just before it tells where the program was.
        for (int64_t e = oom.eventIndex - 1; e >= 0; --e) {
            const TraceEvent& event = trace->events[static_cast<size_t>(e)];
            if (event.action != TraceAction::Alloc)
                continue;
            out.oomInCapture = stacks.graphCapture(event.stack);
            break;
        }
    }
    for (size_t i = 0; i < device.allocations.size(); ++i) {
        const Allocation& a = device.allocations[i];
        if (!a.liveAfter(oom.eventIndex))
            continue;
        const bool captureFrames = a.stack != FrameTable::emptyStack() && stacks.graphCapture(a.stack);
        out.liveCaptureAllocations += captureFrames ? 1 : 0;
        const StateSegment* segment = state.segmentAt(a.address);
        if (captureFrames || (segment && poolOwner(segment->pool) == PoolOwner::CudaGraph))
            out.capturedAllocations.push_back(i);
    }
    for (const StateSegment& segment : state.segments) {
        if (poolOwner(segment.pool) != PoolOwner::CudaGraph)
            continue;
        out.graphPoolReservedBytes += segment.size;
        out.graphPoolFreeBytes += segment.freeBytes;
    }
    if (trace)
        findCapturingPool(*trace, oom, state, out);
    out.oomInCapture |= out.captureSeenByPool;
    if (!out.oomInCapture || out.capturingPool.isDefault())
        return;
    for (const StateSegment& segment : state.segments) {
        if (segment.pool == out.capturingPool) {
            out.capturingPoolFreeBytes += segment.freeBytes;
            continue;
        }
        out.cacheOutsideCaptureBytes += segment.freeBytes;
        if (poolOwner(segment.pool) != PoolOwner::CudaGraph)
            continue;
        out.otherGraphPoolsReservedBytes += segment.size;
        out.otherGraphPoolsLiveBytes += segment.size - std::min(segment.size, segment.freeBytes);
    }
}

void measureStreams(const OomAnalysis& oom, const AllocatorState& state, DistributedEvidence& out)
{
    const bool large = isLargePoolRequest(oom.requestedBytes);
    std::set<int64_t> streams;
    std::map<int64_t, uint64_t> freeByStream;
    for (const StateSegment& segment : state.segments) {
        streams.insert(segment.stream);
        if (segment.stream == oom.stream || segment.isLargePool != large || !segment.pool.isDefault())
            continue;
        freeByStream[segment.stream] += segment.freeBytes;
        out.otherStreamFreeBytes += segment.freeBytes;
        out.otherStreamLargestFree = std::max(out.otherStreamLargestFree, segment.largestFree);
    }
    out.streams = streams.size();
    uint64_t most = 0;
    for (const auto& [stream, bytes] : freeByStream) {
        if (bytes > most) {
            most = bytes;
            out.otherStream = stream;
        }
    }
}

} // namespace

std::string checkpointingInSnapshots(const std::vector<SnapshotAnalysis>& snapshots)
{
    for (const SnapshotAnalysis& analysis : snapshots) {
        if (!analysis.snapshot || !analysis.snapshot->frames || !analysis.snapshot->strings)
            continue;
        DistributedStacks stacks(*analysis.snapshot);
        for (const DeviceAnalysis& device : analysis.devices) {
            for (const Allocation& a : device.allocations) {
                if (a.stack != FrameTable::emptyStack() && stacks.checkpointing(a.stack))
                    return "the snapshot's stacks run under activation checkpointing's frames (torch.utils.checkpoint "
                           "or a wrapper of it)";
            }
        }
    }
    return {};
}

DistributedEvidence distributedEvidence(
    const SnapshotAnalysis& analysis, const DeviceAnalysis& device, const OomAnalysis& oom)
{
    DistributedEvidence out;
    const Snapshot& snapshot = *analysis.snapshot;
    if (!snapshot.frames || !snapshot.strings)
        return out;
    DistributedStacks stacks(snapshot);
    out.pending = pendingFrees(snapshot, device);
    measureCheckpointing(device, stacks, out);
    measureCommunication(snapshot, device, oom, stacks, out);
    const AllocatorState state = allocatorStateAt(snapshot, device, oom.eventIndex);
    measureGraphs(snapshot, device, oom, state, stacks, out);
    measureStreams(oom, state, out);
    return out;
}

} // namespace oomlens
