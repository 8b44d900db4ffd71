#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// Memory the program released but the caching allocator could not yet reuse: a block freed while
// work queued on another stream may still read it (record_stream, collectives on a side stream)
// is held until that stream's event completes. The trace shows it as a free_requested whose
// free_completed comes later (or never); the dump as blocks in state active_pending_free.
//
// Before the allocator gives up on a request it synchronizes on the pending events and releases
// unsplit cached segments (CUDACachingAllocator.cpp), so at the oom event the held memory often
// shows only as completions just before it and as segments reserved while blocks were pending:
// the cause is read from the trace before the failure.
struct PendingFreeWindow
{
    int32_t allocation = -1; // index into DeviceAnalysis::allocations
    int64_t requestedEvent = -1; // free_requested
    int64_t completedEvent = -1; // free_completed; -1: still pending at the dump
    uint64_t bytes = 0; // the block's size
    int64_t stream = 0;
    StackId releasedBy = FrameTable::emptyStack(); // the free_requested entry's frames
};

// The frames that released pending memory, with how much they held at most at once.
struct PendingReleaser
{
    StackId stack = FrameTable::emptyStack();
    uint64_t bytes = 0; // total over its windows
    size_t windows = 0;
};

struct PendingFrees
{
    std::vector<PendingFreeWindow> windows; // by free_requested
    // Right after each trace event (sized like the trace; empty without windows).
    std::vector<uint64_t> pendingAfter;
    uint64_t maxPendingBytes = 0;
    int64_t maxPendingEvent = -1;
    uint64_t atPeakBytes = 0; // at DeviceAnalysis::peakEvent
    uint64_t atOomBytes = 0; // right after the last oom event
    // Completed in the run of completions right before the last oom event, after a window: what
    // the allocator's synchronize-before-failing returned.
    uint64_t releasedAtOomBytes = 0;
    // Segments reserved (segment_alloc / map) while blocks were pending, and how much of them the
    // pending bytes could have covered had they been reusable.
    size_t segmentsWhilePending = 0;
    uint64_t reservedWhilePendingBytes = 0;
    uint64_t coverableWhilePendingBytes = 0;
    // The same, between the start of the failing step and the last oom event.
    uint64_t coverableInFailingStepBytes = 0;
    uint64_t maxPendingInFailingStepBytes = 0;
    int64_t maxPendingInFailingStepEvent = -1;
    // The dump's active_pending_free blocks (segments-only snapshots have nothing else).
    size_t dumpPendingBlocks = 0;
    uint64_t dumpPendingBytes = 0;
    std::vector<PendingReleaser> releasers; // most bytes first, at most 5

    bool any() const { return !windows.empty() || dumpPendingBlocks > 0; }
    uint64_t pendingAt(int64_t event) const
    {
        return event >= 0 && static_cast<size_t>(event) < pendingAfter.size() ? pendingAfter[static_cast<size_t>(event)]
                                                                              : 0;
    }
};

PendingFrees pendingFrees(const Snapshot& snapshot, const DeviceAnalysis& device);

} // namespace oomlens
