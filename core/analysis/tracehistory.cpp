#include "core/analysis/tracehistory.h"

#include "core/analysis/snapshotanalysis.h"

namespace oomlens {

TraceHistory traceHistory(const Snapshot& snapshot, const DeviceAnalysis& device, SnapshotBackend backend)
{
    TraceHistory history;
    history.backend = backend;
    if (const DeviceTrace* trace = snapshot.trace(device.device)) {
        history.traceEvents = trace->events.size();
        for (const TraceEvent& event : trace->events)
            history.allocEvents += event.action == TraceAction::Alloc ? 1 : 0;
    }
    for (const Allocation& allocation : device.allocations) {
        if (!allocation.olderThanTrace())
            continue;
        // Reconstruction opens an older allocation at a free whose alloc it never saw; the rest
        // of the older ones are the dump-time blocks the trace never mentions.
        if (allocation.freeEvent >= 0 || allocation.freeRequestedEvent >= 0) {
            ++history.ghostFrees;
            history.ghostFreeBytes += allocation.requestedSize;
        } else {
            ++history.olderLiveBlocks;
            history.olderLiveBytes += allocation.requestedSize;
        }
    }
    for (const Segment& segment : snapshot.segments) {
        if (segment.device != device.device)
            continue;
        ++history.segments;
        history.reservedBytes += segment.totalSize;
        for (uint32_t b = segment.firstBlock; b < segment.firstBlock + segment.blockCount && b < snapshot.blocks.size();
             ++b) {
            const Block& block = snapshot.blocks[b];
            if (block.state != BlockState::ActiveAllocated && block.state != BlockState::ActivePendingFree)
                continue;
            ++history.liveBlocks;
            history.liveBlockBytes += block.size;
            history.blocksHaveStacks = history.blocksHaveStacks || block.stack != FrameTable::emptyStack();
        }
    }
    // The verdict is the reconstruction's (traceTruncated: it met frees of unseen allocations;
    // initialAllocatedBytes: memory live before the first entry); the counts above detail it.
    if (history.allocEvents == 0)
        history.coverage = TraceHistory::Coverage::SegmentsOnly;
    else if (device.traceTruncated)
        history.coverage = TraceHistory::Coverage::Wrapped;
    else if (device.initialAllocatedBytes > 0)
        history.coverage = TraceHistory::Coverage::LateStart;
    return history;
}

TraceHistory traceHistory(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    return traceHistory(snapshot, device, snapshotBackendFromFrames(snapshot));
}

} // namespace oomlens
