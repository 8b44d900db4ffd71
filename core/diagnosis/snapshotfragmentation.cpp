#include "core/diagnosis/snapshotrules.h"

#include "core/analysis/privatepools.h"
#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

// The unused cache could have served the request but for its split: the pool's free blocks together
// hold it and none alone does (0.9), or reserved − allocated on the request's own stream covers it
// (0.5-0.75 with the share of the cache unused). 0 when neither.
double splitCacheConfidence(const SnapshotEvidence& e, bool pooled, Diagnosis& d)
{
    const uint64_t request = e.oom.requestedBytes;
    const uint64_t unused = e.fixes.budget.fragmentedBytes;
    // A cached block belongs to the stream it was made on: free memory on another stream's blocks
    // could not have served this request, however it was split.
    const uint64_t otherStreams = e.distributed.otherStreamFreeBytes;
    const uint64_t unusedHere = unused > otherStreams ? unused - otherStreams : 0;
    if (pooled) {
        e.evidence(d,
            formatBytes(e.oom.freeInPoolBytes) + " sat free in cached blocks of that pool, more than the "
                + formatBytes(request) + " request, but the largest free block was "
                + formatBytes(e.oom.largestFreeBlock),
            e.oom.eventIndex);
        return 0.9;
    }
    if (unusedHere >= request) {
        e.evidence(d,
            "reserved − allocated was " + formatBytes(unused) + " at the OOM (" + formatBytes(e.oom.reservedBytes)
                + " reserved, " + formatBytes(e.oom.allocatedBytes) + " allocated), more than the "
                + formatBytes(request) + " request",
            e.oom.eventIndex);
        return 0.5 + 0.25 * clamp01(safeRatio(unused, e.oom.reservedBytes) / 0.2);
    }
    return 0.0;
}

void otherStreamsEvidence(const SnapshotEvidence& e, Diagnosis& d)
{
    const uint64_t otherStreams = e.distributed.otherStreamFreeBytes;
    if (otherStreams > 0)
        e.evidence(d,
            formatBytes(otherStreams) + " of the unused cache sat in blocks of stream "
                + std::to_string(e.distributed.otherStream) + (e.distributed.streams > 2 ? " and other streams" : "")
                + ", which cannot serve a request on stream " + std::to_string(e.oom.stream) + " (largest such block "
                + formatBytes(e.distributed.otherStreamLargestFree) + ")",
            e.oom.eventIndex);
}

// What a new segment could still come from: the card's free memory, or under a per-process
// limit what the limit leaves above the reserve (the card may have tens of GiB free).
uint64_t roomForNewSegment(const SnapshotEvidence& e, Diagnosis& d)
{
    const uint64_t usable = *e.fixes.budget.usableBytes;
    const uint64_t roomToReserve = usable > e.oom.reservedBytes ? usable - e.oom.reservedBytes : 0;
    if (e.processLimit && roomToReserve < e.oom.deviceFreeBytes)
        e.evidence(d,
            "the per-process limit left only " + formatBytes(roomToReserve) + " to reserve a new segment (the card had "
                + formatBytes(e.oom.deviceFreeBytes) + " free)");
    else
        e.evidence(d, "the card had only " + formatBytes(e.oom.deviceFreeBytes) + " left to reserve a new segment");
    return roomToReserve;
}

// A request routed into a private pool (a capture underway) is served by that pool alone, which
// grows by whole segments: alloc_block uses expandable segments for no pool a private pool owns
// (CUDACachingAllocator.cpp), so that setting would not change its layout.
bool requestInPrivatePool(const SnapshotEvidence& e, Diagnosis& d)
{
    const bool privatePoolRequest = e.distributed.oomInCapture && !e.distributed.capturingPool.isDefault();
    if (privatePoolRequest)
        e.evidence(d,
            "the request went to " + poolName(e.distributed.capturingPool)
                + ", a private pool: the allocator grows one by whole segments and never with expandable segments, "
                  "so only fewer or smaller captures change its layout");
    return privatePoolRequest;
}

} // namespace

void fragmentation(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const uint64_t request = e.oom.requestedBytes;
    const uint64_t unused = e.fixes.budget.fragmentedBytes;
    if (e.fixes.asyncAllocator || request == 0)
        return;
    Diagnosis d = makeDiagnosis(DiagnosisId::Fragmentation, 0.0, {});
    const bool pooled = e.oom.freeInPoolBytes >= request && e.oom.largestFreeBlock < request;
    double confidence = splitCacheConfidence(e, pooled, d);
    if (confidence <= 0)
        return;
    otherStreamsEvidence(e, d);
    // Reserved − allocated also counts block rounding and the other pool: a few percent of the
    // cache is normal slack, and freeing it would not make room for the next step anyway.
    // Only waste that is a real share of the cache (or big in absolute terms) is a diagnosis.
    const double significance = clamp01(safeRatio(unused, e.oom.reservedBytes) / 0.05);
    if (significance < 0.5 && unused < 512 * MiB)
        return;
    confidence *= 0.6 + 0.4 * std::max(significance, unused >= GiB ? 1.0 : 0.0);
    if (!pooled && e.oom.largestFreeBlock < request && e.oom.largestFreeBlock > 0)
        e.evidence(d,
            "no free block could take " + formatBytes(request) + ": the largest was "
                + formatBytes(e.oom.largestFreeBlock));
    const uint64_t roomToReserve = roomForNewSegment(e, d);
    if (e.fixes.expandableSegmentsOn) {
        confidence *= 0.6;
        e.evidence(d, "expandable segments were already on in this run");
    }
    const bool privatePoolRequest = requestInPrivatePool(e, d);
    d.confidence = confidence;
    d.summary = formatBytes(unused) + " sat unused in PyTorch's cache, but split into blocks smaller than the "
        + formatBytes(request) + " that failed.";
    if (privatePoolRequest)
        appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing }, e.fixes);
    else
        appendFixes(d.fixes,
            { FixKind::ExpandableSegments, FixKind::MaxSplitSize, FixKind::MicroBatch, FixKind::Bf16,
                FixKind::Checkpointing },
            e.fixes);
    d.outlook = dynamicOutlook();
    if (!privatePoolRequest)
        d.outlook->leadingFixFreesOnceBytes = unused + std::min(roomToReserve, e.oom.deviceFreeBytes);
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
