#pragma once

#include "core/snapshot.h"
#include "core/snapshotbackend.h"

#include <cstddef>
#include <cstdint>

namespace oomlens {

struct DeviceAnalysis;

// How much of the run one device's trace saw, counted once for the overview, the timeline, the
// report and `diagnose`. PyTorch's history is a ring buffer of `max_entries` entries that starts
// where `_record_memory_history` was called (or `clear_history` emptied it): memory allocated
// before that moment is only known from the dump-time blocks, and a free whose allocation was
// overwritten is a "ghost" free with no stack of its own allocation.
struct TraceHistory
{
    enum class Coverage : uint8_t {
        Complete, // every allocation the trace mentions was made inside it
        LateStart, // blocks live at the dump were allocated before the trace began, no ghost frees
        Wrapped, // ghost frees: the ring buffer overwrote the beginning (or clear_history cut it)
        SegmentsOnly, // no allocation in the trace at all: the dump-time state alone
    };
    Coverage coverage = Coverage::Complete;
    size_t traceEvents = 0;
    size_t allocEvents = 0;
    size_t ghostFrees = 0; // frees in the trace whose alloc is not in it
    uint64_t ghostFreeBytes = 0;
    size_t olderLiveBlocks = 0; // live at the dump, allocated before the trace, never touched by it
    uint64_t olderLiveBytes = 0;
    // Segments only: the dump-time state that is all there is.
    size_t segments = 0;
    uint64_t reservedBytes = 0;
    size_t liveBlocks = 0;
    uint64_t liveBlockBytes = 0;
    bool blocksHaveStacks = false; // categories can be told from the blocks' stacks
    // Who wrote the snapshot, from its frames (core/snapshotbackend.h): the advice names its module
    // (torch.xpu.memory, not torch.cuda.memory, for an XPU run). A consumer holding the case sets it
    // from snapshotBackendOf, which also reads the OOM message beside the snapshot.
    SnapshotBackend backend = SnapshotBackend::Cuda;

    // Older than the trace in all: ghost frees and the older blocks still live at the dump; their
    // requested bytes add up to DeviceAnalysis::initialAllocatedBytes.
    size_t olderBlocks() const { return ghostFrees + olderLiveBlocks; }
    uint64_t olderBytes() const { return ghostFreeBytes + olderLiveBytes; }
    bool truncated() const { return coverage == Coverage::LateStart || coverage == Coverage::Wrapped; }
    bool segmentsOnly() const { return coverage == Coverage::SegmentsOnly; }
};

// Counted by analyzeSnapshot into DeviceAnalysis::history; read that. `backend` is the frames' own
// (snapshotBackendFromFrames).
TraceHistory traceHistory(const Snapshot& snapshot, const DeviceAnalysis& device, SnapshotBackend backend);
// The same with the backend read from the snapshot's frames here.
TraceHistory traceHistory(const Snapshot& snapshot, const DeviceAnalysis& device);

} // namespace oomlens
