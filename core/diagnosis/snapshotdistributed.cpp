// The snapshot's rules for what distributed training and CUDA graphs add (product.md §3, wave 3):
// pending frees, collectives' buffers kept beyond need, CUDA graph capture. Each names memory the
// machinery holds rather than the model's tensors, so none of their fixes is a smaller batch.
#include "core/diagnosis/snapshotrules.h"

#include "core/analysis/privatepools.h"
#include "core/analysis/userframe.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/ranking.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

// "fsdp/_fully_shard/_fsdp_collectives.py:312 foreach_reduce": the innermost Python frame, which is
// where the program dropped its reference.
std::string releaserText(const Snapshot& snapshot, StackId stack)
{
    if (!snapshot.frames || !snapshot.strings || stack == FrameTable::emptyStack())
        return "no frames recorded";
    const auto frames = snapshot.frames->stack(stack);
    for (FrameId id : frames) {
        const Frame& frame = snapshot.frames->frame(id);
        const std::string_view file = snapshot.strings->get(frame.filename);
        if (!isPythonFile(file))
            continue;
        return std::string(file) + ":" + std::to_string(frame.line) + " "
            + std::string(snapshot.strings->get(frame.name));
    }
    const Frame& frame = snapshot.frames->frame(frames[0]);
    return std::string(snapshot.strings->get(frame.name));
}

// Who held the pending blocks, by the bytes their allocating and releasing frames account for:
// FSDP1 records streams itself (TORCH_NCCL_AVOID_RECORD_STREAMS does not reach it; FSDP2 does not
// record streams), other torch.distributed code through ProcessGroupNCCL (the setting stops it),
// anything else is the program's own side stream (only waiting for it helps).
// DeepSpeed ZeRO-3 is the fourth: free_param tags every released gathered parameter with
// record_stream itself (partition_parameters.py), whatever TORCH_NCCL_AVOID_RECORD_STREAMS says.
enum class PendingOwner { Program, Nccl, Fsdp1, DeepSpeed };

PendingOwner pendingOwner(const SnapshotEvidence& e)
{
    const Snapshot& snapshot = *e.analysis.snapshot;
    auto ownerOf = [&](StackId stack) {
        if (!snapshot.frames || !snapshot.strings || stack == FrameTable::emptyStack())
            return PendingOwner::Program;
        PendingOwner owner = PendingOwner::Program;
        for (FrameId id : snapshot.frames->stack(stack)) {
            const std::string_view file = snapshot.strings->get(snapshot.frames->frame(id).filename);
            const bool fsdp2 = file.find("fsdp/_fully_shard") != std::string_view::npos
                || file.find("_composable/fsdp") != std::string_view::npos;
            if (file.find("torch/distributed/fsdp/") != std::string_view::npos && !fsdp2)
                return PendingOwner::Fsdp1;
            if (file.find("deepspeed/runtime/zero/") != std::string_view::npos)
                return PendingOwner::DeepSpeed;
            if (file.find("torch/distributed") != std::string_view::npos)
                owner = PendingOwner::Nccl;
        }
        return owner;
    };
    uint64_t bytes[4] = { 0, 0, 0, 0 };
    for (const PendingFreeWindow& w : e.distributed.pending.windows) {
        const Allocation& a = e.device.allocations[static_cast<size_t>(w.allocation)];
        PendingOwner owner = ownerOf(a.stack);
        if (owner == PendingOwner::Program)
            owner = ownerOf(w.releasedBy);
        bytes[static_cast<int>(owner)] += w.bytes;
    }
    if (bytes[3] >= bytes[2] && bytes[3] >= bytes[1] && bytes[3] >= bytes[0] && bytes[3] > 0)
        return PendingOwner::DeepSpeed;
    if (bytes[2] >= bytes[1] && bytes[2] >= bytes[0] && bytes[2] > 0)
        return PendingOwner::Fsdp1;
    if (bytes[1] >= bytes[0] && bytes[1] > 0)
        return PendingOwner::Nccl;
    return PendingOwner::Program;
}

// A diagnosis `id` whose story this cause explains ranks below it: the split cache a cause left
// behind (fragmentation), a rule whose story (activations and new gradients of the first backward,
// Adam's new state) does not describe the memory that failed to fit. Only one ranked at or above
// the cause's level less 0.05 is lowered and marked.
void rankBelow(const SnapshotEvidence& e, std::vector<Diagnosis>& out, const Diagnosis& cause, DiagnosisId id,
    const std::string& why)
{
    for (Diagnosis& d : out) {
        if (d.id != id || d.confidence < cause.confidence - 0.05)
            continue;
        d.confidence = std::max(0.05, cause.confidence - 0.05);
        e.evidence(d, explainedByLine(cause.id, why));
    }
}

// The same for fragmentation wherever it ranks: the mark keeps it below when the OOM message's
// figures raise it later (rankDiagnoses).
void markFragmentationBelow(
    const SnapshotEvidence& e, std::vector<Diagnosis>& out, const Diagnosis& cause, const std::string& why)
{
    for (Diagnosis& d : out) {
        if (d.id != DiagnosisId::Fragmentation)
            continue;
        d.confidence = std::min(d.confidence, std::max(0.05, cause.confidence - 0.05));
        e.evidence(d, explainedByLine(cause.id, why));
    }
}

double pendingFreesConfidence(const SnapshotEvidence& e, const PendingFrees& p, uint64_t held)
{
    if (held >= e.oom.requestedBytes)
        return 0.6 + 0.3 * clamp01(safeRatio(held, e.oom.reservedBytes) / 0.1);
    if (p.maxPendingInFailingStepBytes >= e.oom.requestedBytes)
        return 0.45;
    return 0.0;
}

// The pending windows as the trace shows them: how many, how much at once, the segments reserved
// meanwhile, what the allocator's wait returned at the failure, and who released them.
void pendingFreesEvidence(const SnapshotEvidence& e, const PendingFrees& p, Diagnosis& d)
{
    e.evidence(d,
        std::to_string(p.windows.size()) + " frees waited for work on another stream (free_requested long before "
            + "free_completed): up to " + formatBytes(p.maxPendingBytes)
            + " freed by the program but not reusable at once",
        p.maxPendingEvent);
    if (p.maxPendingInFailingStepBytes > 0)
        e.evidence(d,
            formatBytes(p.maxPendingInFailingStepBytes) + " pending at once in " + e.where() + ", the step that failed",
            p.maxPendingInFailingStepEvent);
    if (p.segmentsWhilePending > 0)
        e.evidence(d,
            std::to_string(p.segmentsWhilePending) + " segments (" + formatBytes(p.reservedWhilePendingBytes)
                + ") were reserved while blocks were pending; the pending blocks of the same stream could have served "
                + formatBytes(p.coverableWhilePendingBytes) + " of them (" + formatBytes(p.coverableInFailingStepBytes)
                + " in the failing step)");
    if (p.releasedAtOomBytes > 0)
        e.evidence(d,
            "before giving up, the allocator waited for the pending events and got back "
                + formatBytes(p.releasedAtOomBytes)
                + ": too late, the cache was already split into segments reserved meanwhile",
            e.oom.eventIndex);
    if (p.atOomBytes > 0)
        e.evidence(d, formatBytes(p.atOomBytes) + " still pending at the OOM", e.oom.eventIndex);
    if (p.dumpPendingBlocks > 0)
        e.evidence(d,
            std::to_string(p.dumpPendingBlocks) + " blocks (" + formatBytes(p.dumpPendingBytes)
                + ") still active_pending_free at the dump");
    const Snapshot& snapshot = *e.analysis.snapshot;
    for (size_t i = 0; i < std::min<size_t>(3, p.releasers.size()); ++i)
        e.evidence(d,
            "released by " + releaserText(snapshot, p.releasers[i].stack) + ": " + formatBytes(p.releasers[i].bytes)
                + " in " + std::to_string(p.releasers[i].windows) + " frees that waited");
}

// The fixes follow whoever tags the blocks with record_stream: only that code's settings change it.
void pendingOwnerFixes(const SnapshotEvidence& e, Diagnosis& d)
{
    switch (pendingOwner(e)) {
    case PendingOwner::DeepSpeed:
        e.evidence(d,
            "the pending blocks are DeepSpeed ZeRO-3's gathered parameters, which free_param tags with record_stream "
            "itself: how many are pending follows how many it gathers ahead");
        appendFixes(d.fixes, { FixKind::FewerAllGathersInFlight, FixKind::SynchronizeBeforeReuse }, e.fixes);
        break;
    case PendingOwner::Fsdp1:
        e.evidence(d, "the pending blocks are FSDP's own buffers, which it tags with record_stream itself");
        appendFixes(d.fixes, { FixKind::Fsdp2, FixKind::SynchronizeBeforeReuse, FixKind::AvoidRecordStreams }, e.fixes);
        break;
    case PendingOwner::Nccl:
        appendFixes(d.fixes, { FixKind::AvoidRecordStreams, FixKind::Fsdp2, FixKind::SynchronizeBeforeReuse }, e.fixes);
        break;
    case PendingOwner::Program:
        e.evidence(d,
            "no torch.distributed frame allocated or released the pending blocks: a side stream of the "
            "program's own (x.record_stream(s))");
        appendFixes(d.fixes, { FixKind::SynchronizeBeforeReuse, FixKind::AvoidRecordStreams, FixKind::Fsdp2 }, e.fixes);
        break;
    }
}

} // namespace

void pendingFrees(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const PendingFrees& p = e.distributed.pending;
    const uint64_t request = e.oom.requestedBytes;
    if (p.windows.empty() || request == 0)
        return;
    // Before it gives up, the allocator waits for every pending event and returns those blocks to
    // the cache (release_cached_blocks begins with synchronize_and_free_events,
    // CUDACachingAllocator.cpp), so pending frees can have caused the failure only through the
    // split cache their window left behind, or through blocks still pending at the failure where
    // that wait is skipped (a capture underway, a private pool in use; the trace counts them live
    // until free_completed). When the live tensors other than those and the request exceed what this
    // process could hold, no layout of the cache would have served the request.
    const auto spareUnsplit = e.fixes.budget.spareAfter(p.atOomBytes, true);
    if (spareUnsplit && *spareUnsplit < 0)
        return;
    // What pending frees kept from reuse around the failure (measured once with the evidence, for
    // the ladder's projection too).
    const uint64_t held = e.fixes.pendingFreeBytes;
    const double confidence = pendingFreesConfidence(e, p, held);
    if (confidence <= 0)
        return;
    Diagnosis d = makeDiagnosis(DiagnosisId::PendingFrees, confidence, {});
    pendingFreesEvidence(e, p, d);
    d.summary = formatBytes(held) + " the program had freed could not be reused until another stream's work "
        + "finished (record_stream, collectives on a side stream), so the allocator reserved new memory instead.";
    pendingOwnerFixes(e, d);
    d.outlook = dynamicOutlook();
    const std::string why = "the " + formatBytes(held)
        + " of cache that was unusable came from blocks held by pending frees while new segments were reserved";
    out.push_back(std::move(d));
    if (held >= request)
        rankBelow(e, out, out.back(), DiagnosisId::Fragmentation, why);
}

namespace {

// ZeRO-1/2's IPG buffer when reduce_bucket_size is left at DeepSpeed's default of 5e8 elements,
// counted at 4 bytes (the widest dtype it buckets). A larger buffer is a size someone set.
constexpr uint64_t defaultIpgBufferBytes = 500'000'000ull * 4;

// Or the failing request is itself a ZeRO IPG buffer: ZeRO-1/2 allocates one (two with
// overlap_comm) of reduce_bucket_size elements when backward starts, whatever the model, so
// their size is a setting; it is the cause when the run fits with them at DeepSpeed's default.
struct IpgBuckets
{
    uint64_t bucketBytes = 0; // the IPG buffers live with the request, the request included
    uint64_t atDefault = 0; // the same count of buffers at DeepSpeed's default size
    uint64_t saving = 0; // what the default size would give back
    std::optional<int64_t> spareWithDefaultBuckets;
    bool cause = false;
};

IpgBuckets measureIpgBuckets(const SnapshotEvidence& e)
{
    const DistributedEvidence& c = e.distributed;
    const uint64_t request = e.oom.requestedBytes;
    IpgBuckets ipg;
    const bool requestIsIpg = c.requestKind == CommunicationKind::ZeroIpgBuffer;
    ipg.bucketBytes = requestIsIpg ? request + c.ipgBufferBytes : 0;
    ipg.atDefault = requestIsIpg ? (1 + c.ipgBufferBytes / request) * defaultIpgBufferBytes : 0;
    ipg.saving = ipg.bucketBytes > ipg.atDefault ? ipg.bucketBytes - ipg.atDefault : 0;
    ipg.spareWithDefaultBuckets = e.fixes.budget.spareAfter(ipg.saving);
    ipg.cause = ipg.saving > 0 && (!ipg.spareWithDefaultBuckets || *ipg.spareWithDefaultBuckets >= 0);
    return ipg;
}

double communicationConfidence(const SnapshotEvidence& e, uint64_t kept, const IpgBuckets& ipg)
{
    const DistributedEvidence& c = e.distributed;
    const double share
        = safeRatio(c.communicationBytes + (ipg.cause ? e.oom.requestedBytes : 0), e.fixes.budget.liveBytes);
    double confidence = 0.55 + 0.35 * clamp01(share / 0.3);
    // The memory the fix removes is pure overhead (a second copy of the gradients, buffers kept
    // past their collective, a bucket above its default) and without it the run fits: it is the
    // cause, whatever else the phase holds.
    const uint64_t removable = ipg.cause               ? ipg.saving
        : c.ddpBucketBytes * 2 >= c.communicationBytes ? c.ddpBucketBytes
                                                       : kept;
    const auto spare = e.fixes.budget.spareAfter(removable);
    if (spare && *spare >= 0)
        confidence = std::max(confidence, 0.9);
    return confidence;
}

// What the communication band holds at the failure, and which of its parts exist only to move data.
void communicationEvidence(
    const SnapshotEvidence& e, uint64_t kept, bool keptCause, const IpgBuckets& ipg, Diagnosis& d)
{
    const DistributedEvidence& c = e.distributed;
    const uint64_t request = e.oom.requestedBytes;
    if (ipg.cause)
        e.evidence(d,
            "the failing " + formatBytes(request) + " request is itself a ZeRO IPG buffer (allocated by "
                + "stage_1_and_2.py's backward), and " + formatBytes(ipg.bucketBytes)
                + " of IPG buffers would be live with it; at DeepSpeed's default reduce_bucket_size (5e8 elements) "
                + "they would hold at most " + formatBytes(ipg.atDefault)
                + (ipg.spareWithDefaultBuckets ? ", and the request would fit" : ""),
            e.oom.eventIndex);
    e.evidence(d,
        "the communication band holds " + formatBytes(c.communicationBytes) + " in "
            + std::to_string(c.communicationBuffers) + " buffers at the OOM in " + e.where() + " ("
            + percentText(c.communicationBytes, e.fixes.budget.liveBytes) + " of live memory)",
        e.oom.eventIndex);
    if (c.buffersPerLine > 1)
        e.evidence(d,
            std::to_string(c.buffersPerLine) + " of them come from one line (" + c.topLineText
                + "): one per layer or bucket, so the band grows with the layer count or the bucket size");
    if (c.ddpBucketBytes > 0)
        e.evidence(d,
            formatBytes(c.ddpBucketBytes)
                + " are DDP buckets holding copies of gradients that are also allocated apart "
                  "(gradient_as_bucket_view=False)");
    if (c.deferredGradientBytes > 0)
        e.evidence(d,
            formatBytes(c.deferredGradientBytes) + " are " + std::to_string(c.deferredGradients)
                + " unsharded gradients kept in the reduce dtype for a reduce-scatter deferred to a later "
                  "micro-batch (set_requires_gradient_sync(False))");
    if (keptCause)
        e.evidence(d,
            formatBytes(kept) + " beyond the two largest buffers a pipelined collective has in flight ("
                + formatBytes(c.inFlightBytes) + "), more than the " + formatBytes(request) + " request");
}

// The fixes lead with the setting that made the largest part of the band.
void communicationFixes(const SnapshotEvidence& e, bool bucketCause, Diagnosis& d)
{
    const DistributedEvidence& c = e.distributed;
    if (c.ddpBucketBytes * 2 >= c.communicationBytes && c.ddpBucketBytes > 0)
        appendFixes(d.fixes, { FixKind::GradientAsBucketView, FixKind::BucketSizes, FixKind::FewerAllGathersInFlight },
            e.fixes);
    else if (bucketCause)
        appendFixes(
            d.fixes, { FixKind::BucketSizes, FixKind::ReshardAfterForward, FixKind::FewerAllGathersInFlight }, e.fixes);
    else if (c.deferredGradientBytes * 2 >= c.communicationBytes)
        appendFixes(d.fixes,
            { FixKind::SyncGradientsEachMicroBatch, FixKind::ReshardAfterForward, FixKind::FewerAllGathersInFlight },
            e.fixes);
    else if (c.communicationFramework == CollectiveFramework::DeepSpeed)
        // ZeRO-3 has no reshard switch: what it keeps gathered is bounded by the prefetch and
        // live-parameter limits first (partitioned_param_coordinator.py's fetch_sub_module).
        appendFixes(
            d.fixes, { FixKind::FewerAllGathersInFlight, FixKind::ReshardAfterForward, FixKind::BucketSizes }, e.fixes);
    else
        appendFixes(
            d.fixes, { FixKind::ReshardAfterForward, FixKind::FewerAllGathersInFlight, FixKind::BucketSizes }, e.fixes);
    if (c.communicationFramework != CollectiveFramework::Unknown)
        e.evidence(d,
            std::string("the band's buffers are ") + collectiveFrameworkText(c.communicationFramework)
                + "'s (their frames): the fixes are in its settings");
}

// The diagnoses whose story the buffers explain rank below them.
void rankBelowCommunication(
    const SnapshotEvidence& e, std::vector<Diagnosis>& out, uint64_t kept, bool keptCause, bool bucketCause)
{
    const Diagnosis& cause = out.back();
    if (bucketCause)
        rankBelow(e, out, cause, DiagnosisId::FirstBackward,
            "the failing request is a ZeRO IPG buffer, not an activation or a gradient");
    // ZeRO-3's pending blocks are the gathered parameters released with record_stream: the prefetch
    // that keeps too many gathered keeps as many pending, so the buffers kept are the cause.
    if (keptCause && !e.distributed.pending.windows.empty() && pendingOwner(e) == PendingOwner::DeepSpeed)
        rankBelow(e, out, cause, DiagnosisId::PendingFrees,
            "the pending blocks are the parameters ZeRO-3 gathered ahead and released with record_stream; fewer "
            "gathered ahead leaves fewer pending");
    // Buffers kept beyond need that outweigh the whole unused cache: without them the request fits
    // even if none of that cache could be reused, so the split cache is where the overflow showed,
    // not why.
    if (keptCause && kept >= e.fixes.budget.fragmentedBytes)
        rankBelow(e, out, cause, DiagnosisId::Fragmentation,
            "the " + formatBytes(kept) + " of communication buffers kept beyond need are more than the "
                + formatBytes(e.fixes.budget.fragmentedBytes) + " of unused cache");
}

} // namespace

void communicationBuffers(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const DistributedEvidence& c = e.distributed;
    const uint64_t request = e.oom.requestedBytes;
    const uint64_t kept = c.keptBeyondNeedBytes();
    if (request == 0)
        return;
    // A pipelined collective needs the buffer it works on and the one it prefetches; the rest are
    // kept per layer or per bucket. Only when they alone would have served the request are they a cause.
    const bool keptCause = c.communicationBuffers > 0 && kept >= request;
    const IpgBuckets ipg = measureIpgBuckets(e);
    if (!keptCause && !ipg.cause)
        return;
    Diagnosis d = makeDiagnosis(DiagnosisId::CommunicationBuffers, communicationConfidence(e, kept, ipg), {});
    communicationEvidence(e, kept, keptCause, ipg, d);
    d.summary = ipg.cause
        ? "The failing request is one of ZeRO's IPG buffers, whose size is the reduce_bucket_size setting: "
            + formatBytes(ipg.bucketBytes) + " of buckets exist only to move gradients between ranks."
        : "Buffers of collectives (all-gathered parameters, reduce-scatter inputs, buckets) are kept alive beyond "
          "the one or two in flight: "
            + formatBytes(kept) + " that exists only to move data between ranks.";
    communicationFixes(e, ipg.cause, d);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
    rankBelowCommunication(e, out, kept, keptCause, ipg.cause);
}

namespace {

// Which memory CUDA graphs kept from the failing request.
struct CaptureHold
{
    // A graph's private pool keeps what it freed during capture for that graph alone: eager
    // execution would have reused it. Only when that is at least the request is it the cause.
    bool poolsHold = false;
    // Failing inside a capture, the cache outside the capturing pool is no use to it and cannot be
    // returned to the driver to retry (release_cached_blocks is skipped while a capture is
    // underway): what the capture could not touch, not a split of what it could.
    bool captureLockedOut = false;
    // Graphs captured before, still referenced, whose pools alone would have served the request.
    bool oldGraphsHold = false;
    // Or the capturing pool's own cache would have held the request, but split: a private pool grows
    // by whole segments only (alloc_block uses expandable segments for no pool a private pool owns)
    // and gives nothing back while a capture is underway, so every shape captured into it leaves its
    // blocks there for later captures to fit between. Fewer shapes, not an allocator setting.
    bool splitInCapturingPool = false;
};

CaptureHold measureCaptureHold(const SnapshotEvidence& e)
{
    const DistributedEvidence& g = e.distributed;
    const uint64_t request = e.oom.requestedBytes;
    CaptureHold hold;
    hold.poolsHold = g.graphPoolFreeBytes >= request && request > 0;
    hold.captureLockedOut = g.oomInCapture && request > 0 && g.cacheOutsideCaptureBytes >= request;
    hold.oldGraphsHold = g.oomInCapture && request > 0 && g.otherGraphPoolsReservedBytes >= request;
    hold.splitInCapturingPool = g.oomInCapture && request > 0 && g.capturingPoolFreeBytes >= request;
    return hold;
}

// How the capture shows in the trace, and what each pool held at the failure.
void captureEvidence(const SnapshotEvidence& e, const CaptureHold& hold, Diagnosis& d)
{
    const DistributedEvidence& g = e.distributed;
    if (g.oomInCapture && !g.captureSeenByPool)
        e.evidence(d,
            "the failing request came from inside a CUDA graph capture (torch.cuda.graph, make_graphed_callables, "
            "cudagraph trees or an engine's capture_model frames)",
            e.oom.eventIndex);
    if (g.captureSeenByPool)
        e.evidence(d,
            "the failing request came from inside a CUDA graph capture: its stream held only segments of CUDA graph "
            "pools, and its previous allocation went into "
                + poolName(g.capturingPool)
                + "; the allocator sends a stream's requests to a graph's private pool only while a capture on it is "
                  "underway",
            g.capturingPoolEvent);
    if (g.liveCaptureAllocations > 0)
        e.evidence(
            d, std::to_string(g.liveCaptureAllocations) + " allocations made inside a capture were live at the OOM");
    if (g.graphPoolReservedBytes > 0)
        e.evidence(d,
            "CUDA graphs' private pools reserved " + formatBytes(g.graphPoolReservedBytes) + " at the OOM, "
                + formatBytes(g.graphPoolFreeBytes) + " of it free but usable only by their graphs",
            e.oom.eventIndex);
    if (g.oomInCapture && g.otherGraphPoolsReservedBytes > 0)
        e.evidence(d,
            "graphs captured before are still alive: pools other than the capturing one reserve "
                + formatBytes(g.otherGraphPoolsReservedBytes) + " (" + formatBytes(g.otherGraphPoolsLiveBytes)
                + " of it their live outputs), held until those graphs are deleted");
    if (hold.captureLockedOut)
        e.evidence(d,
            formatBytes(g.cacheOutsideCaptureBytes) + " sat cached free outside " + poolName(g.capturingPool)
                + " (the default pool on any stream, other graphs' pools): a capture allocates only from its own "
                  "pool, and while one is underway the allocator does not release cached segments to retry, so "
                  "torch.cuda.empty_cache() (and deleting graphs no longer needed) before capturing returns it",
            e.oom.eventIndex);
    if (hold.splitInCapturingPool)
        e.evidence(d,
            formatBytes(g.capturingPoolFreeBytes) + " sat free inside " + poolName(g.capturingPool)
                + ", the capturing pool, split among the blocks of what was captured into it before: a private "
                  "pool grows by whole segments (expandable segments are never used for one) and releases nothing "
                  "while a capture is underway",
            e.oom.eventIndex);
}

std::string captureSummary(const SnapshotEvidence& e, const CaptureHold& hold)
{
    const DistributedEvidence& g = e.distributed;
    if (hold.oldGraphsHold)
        return "The run ran out of memory while capturing CUDA graphs, with "
            + formatBytes(g.otherGraphPoolsReservedBytes)
            + " still reserved by the pools of graphs captured before: the new graphs needed a pool beside theirs. "
              "Deleting the old graphs (and emptying the cache) before capturing again returns it.";
    if (hold.captureLockedOut)
        return "The run ran out of memory while capturing a CUDA graph: the capture may use only its private "
               "pool, and the "
            + formatBytes(g.cacheOutsideCaptureBytes)
            + " cached outside it (warm-up, eager work) could neither serve it nor be released while capturing.";
    if (hold.splitInCapturingPool)
        return "The run ran out of memory while capturing a CUDA graph into a pool that already held "
            + formatBytes(g.capturingPoolFreeBytes)
            + " free, split among what earlier captures of other shapes left in it: each new shape needs blocks of "
              "its own sizes, and a private pool only grows. Capturing fewer shapes keeps it small.";
    if (g.oomInCapture)
        return "The run ran out of memory while capturing CUDA graphs: each graph's pool keeps the memory it used, "
               "and the graphs captured before held what eager execution would have reused.";
    return formatBytes(g.graphPoolFreeBytes) + " sat free in CUDA graphs' private pools, reusable only by their "
        + "graphs, more than the " + formatBytes(e.oom.requestedBytes) + " request.";
}

// The split cache is where a capture's overflow showed, not why.
void rankFragmentationBelowCapture(const SnapshotEvidence& e, std::vector<Diagnosis>& out, const CaptureHold& hold)
{
    const DistributedEvidence& g = e.distributed;
    if (hold.splitInCapturingPool && !hold.captureLockedOut)
        markFragmentationBelow(e, out, out.back(),
            "the " + formatBytes(g.capturingPoolFreeBytes)
                + " of split cache is the capturing pool's own, made by the shapes captured into it; expandable "
                  "segments do not apply to a private pool");
    if (hold.captureLockedOut)
        markFragmentationBelow(e, out, out.back(),
            "the failing request was captured into a private pool, and the " + formatBytes(g.cacheOutsideCaptureBytes)
                + " of cache outside it is memory a capture may neither use nor release");
    else if (hold.poolsHold)
        rankBelow(e, out, out.back(), DiagnosisId::Fragmentation,
            formatBytes(g.graphPoolFreeBytes) + " of the unused cache is CUDA graphs' private pools, which no other "
                + "request may use");
}

} // namespace

void graphCapture(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const DistributedEvidence& g = e.distributed;
    const CaptureHold hold = measureCaptureHold(e);
    if (!g.oomInCapture && !hold.poolsHold)
        return;
    const uint64_t unused = e.fixes.budget.fragmentedBytes;
    const double confidence = g.oomInCapture
        ? 0.85
        : 0.55 + 0.3 * clamp01(safeRatio(g.graphPoolFreeBytes, std::max(unused, e.oom.requestedBytes)));
    Diagnosis d = makeDiagnosis(DiagnosisId::GraphCapture, confidence, {});
    captureEvidence(e, hold, d);
    d.summary = captureSummary(e, hold);
    // What the capture could not use leads when it alone would have served the request.
    if (hold.captureLockedOut || hold.oldGraphsHold)
        appendFixes(d.fixes, { FixKind::ReleaseBeforeCapture }, e.fixes);
    // The capturing pool split by the shapes captured into it: fewer shapes first (sharing a pool
    // is what split it).
    if (hold.splitInCapturingPool && !hold.captureLockedOut && !hold.oldGraphsHold)
        appendFixes(d.fixes, { FixKind::FewerGraphShapes }, e.fixes);
    appendFixes(d.fixes, { FixKind::ShareGraphPool, FixKind::FewerGraphShapes, FixKind::EagerFallback }, e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
    rankFragmentationBelowCapture(e, out, hold);
}

} // namespace oomlens::snapshotrules
