#pragma once

#include "core/analysis/distributedstacks.h"
#include "core/analysis/pendingfrees.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <string>
#include <vector>

namespace oomlens {

// What distributed training and CUDA graphs add to one device's failure, measured once for the
// rules pending_frees, communication_buffers and graph_capture and for the ladder (checkpointing
// already on): the pending frees, the communication band's buffers at the failure, activation
// checkpointing's recomputation, the graphs' private pools.
struct DistributedEvidence
{
    PendingFrees pending;

    // Activation checkpointing: its frames anywhere in the trace or the dump.
    bool checkpointing = false;
    uint64_t recomputedBytes = 0; // allocated by recomputation inside backward, over the trace
    size_t recomputedAllocations = 0;
    // The most recomputed activations live at once, and when: the recompute's own peak.
    uint64_t recomputePeakBytes = 0;
    int64_t recomputePeakEvent = -1;
    std::string checkpointingText; // for evidence and the ladder

    // The communication band at the failure.
    size_t communicationBuffers = 0; // live allocations banded communication
    uint64_t communicationBytes = 0;
    uint64_t ddpBucketBytes = 0; // DDP buckets holding copies of the gradients
    uint64_t ipgBufferBytes = 0; // ZeRO's IPG buffers (reduce_bucket_size each)
    uint64_t deferredGradientBytes = 0; // unsharded gradients kept for a deferred reduce-scatter
    size_t deferredGradients = 0;
    // Whose buffers the band mostly is (by bytes): the framework whose settings its fixes speak.
    CollectiveFramework communicationFramework = CollectiveFramework::Unknown;
    // What the failing request itself was for, from its frames: a bucket whose size is a setting.
    CommunicationKind requestKind = CommunicationKind::None;
    uint64_t inFlightBytes = 0; // the two largest other buffers: what a pipelined collective needs
    // What a run keeping only the buffers in flight (and no duplicate DDP buckets) would free.
    uint64_t keptBeyondNeedBytes() const
    {
        return communicationBytes > inFlightBytes ? communicationBytes - inFlightBytes : 0;
    }
    // How many buffers the most-repeated communicating line of code has live: one per layer or bucket.
    size_t buffersPerLine = 0;
    std::string topLineText; // "torch/distributed/fsdp/_flat_param.py:unshard:795", the innermost Python frame

    // CUDA graphs.
    bool oomInCapture = false; // the failing request came from inside a capture
    size_t liveCaptureAllocations = 0; // allocated inside a capture and live at the failure
    // Live at the failure and recorded into a graph: made under capture frames, or placed in a CUDA
    // graph's private pool (the allocator routes a stream's requests there only while a capture on
    // it is underway). A graph's intermediates and static outputs, rewritten by every replay: no
    // batch's output kept. Indices into DeviceAnalysis::allocations, ascending.
    std::vector<size_t> capturedAllocations;
    uint64_t graphPoolReservedBytes = 0; // CUDA graph pools' segments live at the failure
    uint64_t graphPoolFreeBytes = 0; // of which free (cached by the graphs' pools)
    // The allocator routes a stream's requests into a graph's private pool only while a capture on
    // that stream is underway (captures_underway): a failing request whose stream holds nothing but
    // graph-pool segments, and whose previous allocation went into one, was captured, whatever
    // its frames show (a `with torch.cuda.graph(g):` body runs in the caller's frame).
    bool captureSeenByPool = false;
    PoolId capturingPool; // the pool that previous allocation went into; default when unknown
    int64_t capturingPoolEvent = -1; // that allocation's event
    // During a capture, what the capture could neither use nor give back: cached free memory of
    // every other pool (the default pool on any stream, other graphs' pools). A capture allocates
    // only from its own pool, and the OOM path skips release_cached_blocks while captures_underway
    // is not empty, so that cache stays reserved. 0 when the capturing pool is unknown.
    uint64_t cacheOutsideCaptureBytes = 0;
    // Cached free inside the capturing pool: the capture's own cache, split by what it and the
    // graphs captured into the same pool before it allocated. 0 when the capturing pool is unknown.
    uint64_t capturingPoolFreeBytes = 0;
    // Reserved by graph pools other than the capturing one: graphs captured before and still alive.
    uint64_t otherGraphPoolsReservedBytes = 0;
    uint64_t otherGraphPoolsLiveBytes = 0; // of which held by live blocks (their static outputs)

    // Streams: cached free memory of the request's pool kind on other streams than the failing
    // request's, which that request cannot use (a block belongs to the stream it was made on).
    uint64_t otherStreamFreeBytes = 0;
    uint64_t otherStreamLargestFree = 0;
    int64_t otherStream = 0; // the stream holding most of it
    size_t streams = 0; // streams with segments at the failure
};

// Activation checkpointing's frames in the stacks of any snapshot's devices: "the snapshot's stacks
// run under torch/utils/checkpoint.py"; empty when none shows it.
std::string checkpointingInSnapshots(const std::vector<SnapshotAnalysis>& snapshots);

DistributedEvidence distributedEvidence(
    const SnapshotAnalysis& analysis, const DeviceAnalysis& device, const OomAnalysis& oom);

} // namespace oomlens
