// The fixes for what distributed training and CUDA graphs add: blocks held by pending frees,
// collectives' buffers kept alive, graphs' private pools, and what is left when activation
// checkpointing is already on. None of them is a smaller batch: they act on the memory the
// machinery holds, not on the model's tensors.
#include "core/diagnosis/fixladder.h"

#include "core/units.h"

#include <cstdio>

namespace oomlens {

namespace {

// 9100000000 -> "9.1e9": how DeepSpeed's settings count elements.
std::string scientificCount(uint64_t count)
{
    int exponent = 0;
    double mantissa = static_cast<double>(count);
    while (mantissa >= 10.0) {
        mantissa /= 10.0;
        ++exponent;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.1fe%d", mantissa, exponent);
    return text;
}

void projectSaving(Fix& fix, const std::string& what, uint64_t saving, const FixContext& context)
{
    if (saving == 0)
        return;
    fix.projectedSavingBytes = static_cast<int64_t>(saving);
    if (const auto spare = context.budget.spareAfter(saving))
        fix.fitsAfter = *spare >= 0;
    const std::string fit = context.budget.fitPhrase(saving);
    fix.detail
        += " " + what + ": " + formatSignedBytes(-static_cast<int64_t>(saving)) + (fit.empty() ? "" : "; " + fit) + ".";
}

Fix avoidRecordStreams(const FixContext& context)
{
    Fix fix { FixKind::AvoidRecordStreams,
        "Stop collectives from holding freed blocks (TORCH_NCCL_AVOID_RECORD_STREAMS=1)",
        "A tensor used by a collective on NCCL's stream is tagged with record_stream; when the program frees it the "
        "allocator may not hand the block out again until that stream's work is done, so every step holds its "
        "collectives' buffers longer than needed. With this setting ProcessGroupNCCL keeps the tensors alive itself "
        "until the work is waited on, and frees go straight back to the cache.",
        "export TORCH_NCCL_AVOID_RECORD_STREAMS=1   # before the process starts (default on in recent PyTorch)\n"
        "# own side streams: keep a reference until the stream is done instead of x.record_stream(s)\n"
        "done = torch.cuda.Event(); done.record(side_stream)\n"
        "done.wait(torch.cuda.current_stream()); del x",
        std::nullopt, std::nullopt, false };
    projectSaving(fix, "the blocks held by pending frees become reusable at once", context.pendingFreeBytes, context);
    return fix;
}

Fix fsdp2()
{
    return Fix { FixKind::Fsdp2, "Move to FSDP2 (fully_shard), which does not use record_stream",
        "FSDP2 manages its all-gather and reduce-scatter buffers with explicit stream waits instead of "
        "record_stream, so freed buffers are reusable when the program frees them and memory is deterministic.",
        "from torch.distributed.fsdp import fully_shard   # torch >= 2.6 (torch.distributed._composable.fsdp before)\n"
        "for block in model.layers:\n"
        "    fully_shard(block)\n"
        "fully_shard(model)",
        std::nullopt, std::nullopt, false };
}

Fix synchronizeBeforeReuse()
{
    return Fix { FixKind::SynchronizeBeforeReuse, "Wait for the side stream before freeing its tensors",
        "A block freed while another stream may still use it is held until an event recorded on that stream "
        "completes. Waiting for the stream (or its event) before dropping the last reference lets the allocator "
        "reuse the block immediately, at the cost of some overlap.",
        "with torch.cuda.stream(side):\n"
        "    y = collective_or_copy(x)\n"
        "torch.cuda.current_stream().wait_stream(side)   # instead of x.record_stream(torch.cuda.current_stream())\n"
        "del x",
        std::nullopt, std::nullopt, false };
}

// One framework's lines of a snippet when the communication band is that framework's buffers (a
// DeepSpeed run gets no FSDP2 call to paste); every framework's lines otherwise.
struct FrameworkSnippet
{
    CollectiveFramework framework;
    const char* lines;
};

std::string snippetFor(
    CollectiveFramework framework, std::initializer_list<FrameworkSnippet> variants, const char* everyFramework)
{
    for (const FrameworkSnippet& variant : variants) {
        if (variant.framework == framework)
            return variant.lines;
    }
    return everyFramework;
}

Fix reshardAfterForward(const FixContext& context)
{
    Fix fix { FixKind::ReshardAfterForward, "Reshard parameters after forward",
        "All-gathered (unsharded) parameters kept from forward to backward hold a full copy of every layer's "
        "weights per rank; resharding frees each layer's copy after its forward and all-gathers it again in "
        "backward (one more all-gather per layer).",
        snippetFor(context.collectiveFramework,
            { { CollectiveFramework::Fsdp2, "fully_shard(block, reshard_after_forward=True)" },
                { CollectiveFramework::Fsdp1,
                    "FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD)   # not SHARD_GRAD_OP" },
                { CollectiveFramework::DeepSpeed,
                    "\"zero_optimization\": {\"stage\": 3, \"stage3_max_reuse_distance\": 1e8,\n"
                    "                      \"stage3_param_persistence_threshold\": 1e5}" } },
            "# FSDP2\n"
            "fully_shard(block, reshard_after_forward=True)\n"
            "# FSDP1\n"
            "FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD)   # not SHARD_GRAD_OP\n"
            "# DeepSpeed ZeRO-3\n"
            "\"zero_optimization\": {\"stage\": 3, \"stage3_max_live_parameters\": 1e9, "
            "\"stage3_max_reuse_distance\": 1e9}"),
        std::nullopt, std::nullopt, false };
    // ZeRO-3 releases a submodule's gathered parameters after its forward unless they are reused
    // within stage3_max_reuse_distance elements or are below stage3_param_persistence_threshold
    // (PartitionedParameterCoordinator.release_sub_module).
    if (context.collectiveFramework == CollectiveFramework::DeepSpeed)
        fix.detail = "ZeRO-3 keeps a submodule's gathered parameters after its forward when they will be used again "
                     "within stage3_max_reuse_distance elements, and never releases those under "
                     "stage3_param_persistence_threshold; smaller values release them after use and gather them "
                     "again when needed.";
    projectSaving(
        fix, "the communication buffers beyond the two in flight are freed", context.communicationKeptBytes, context);
    return fix;
}

Fix fewerAllGathersInFlight(const FixContext& context)
{
    Fix fix { FixKind::FewerAllGathersInFlight, "Limit how many all-gathers run ahead",
        "Prefetching gathers the next layers' parameters while the current one computes; each prefetched layer "
        "holds its unsharded copy. Fewer in flight trades some overlap for memory.",
        snippetFor(context.collectiveFramework,
            { { CollectiveFramework::Fsdp1,
                  "FSDP(model, limit_all_gathers=True, forward_prefetch=False,\n"
                  "     backward_prefetch=BackwardPrefetch.BACKWARD_POST)" },
                { CollectiveFramework::Fsdp2,
                    "# prefetch explicitly at most one module ahead\n"
                    "block.set_modules_to_forward_prefetch([next_block])\n"
                    "block.set_modules_to_backward_prefetch([previous_block])" },
                { CollectiveFramework::DeepSpeed,
                    "\"zero_optimization\": {\"stage\": 3, \"stage3_prefetch_bucket_size\": 5e7,\n"
                    "                      \"stage3_max_live_parameters\": 1e9}   # DeepSpeed's defaults" } },
            "# FSDP1\n"
            "FSDP(model, limit_all_gathers=True, forward_prefetch=False,\n"
            "     backward_prefetch=BackwardPrefetch.BACKWARD_POST)\n"
            "# FSDP2: prefetch explicitly at most one module ahead\n"
            "block.set_modules_to_forward_prefetch([next_block])\n"
            "# DeepSpeed ZeRO-3\n"
            "\"stage3_prefetch_bucket_size\": 5e7"),
        std::nullopt, std::nullopt, false };
    // ZeRO-3's coordinator prefetches while the parameters in flight stay under
    // min(stage3_max_live_parameters - those already gathered, stage3_prefetch_bucket_size) elements
    // (partitioned_param_coordinator.py, fetch_sub_module).
    if (context.collectiveFramework == CollectiveFramework::DeepSpeed) {
        fix.detail = "ZeRO-3 gathers the next submodules' parameters ahead while those gathered stay under "
                     "stage3_max_live_parameters elements, up to stage3_prefetch_bucket_size elements at a time; "
                     "each gathered layer holds its full parameters on every rank until released.";
        if (context.communicationBytes > 0)
            fix.detail += " The " + formatBytes(context.communicationBytes) + " gathered at the failure are about "
                + scientificCount(context.communicationBytes / 2) + " elements at 2 bytes each.";
    } else if (context.communicationKeptBytes > 0 && context.communicationBytes > 0)
        fix.detail += " The communication band holds " + formatBytes(context.communicationBytes) + " at the failure.";
    return fix;
}

Fix bucketSizes(const FixContext& context)
{
    Fix fix { FixKind::BucketSizes, "Smaller communication buckets",
        "DDP copies gradients into buckets of bucket_cap_mb each (and keeps them for the whole run unless the "
        "gradients are views of them); ZeRO gathers gradients in IPG buckets of reduce_bucket_size and "
        "parameters in allgather_bucket_size. Smaller buckets, or gradients as views of the buckets, hold less.",
        snippetFor(context.collectiveFramework,
            { { CollectiveFramework::Ddp, "DDP(model, bucket_cap_mb=10, gradient_as_bucket_view=True)" },
                { CollectiveFramework::DeepSpeed,
                    "\"zero_optimization\": {\"reduce_bucket_size\": 5e7, \"allgather_bucket_size\": 5e7,\n"
                    "                      \"overlap_comm\": false}" } },
            "DDP(model, bucket_cap_mb=10, gradient_as_bucket_view=True)\n"
            "\n"
            "# DeepSpeed\n"
            "\"zero_optimization\": {\"reduce_bucket_size\": 5e7, \"allgather_bucket_size\": 5e7,\n"
            "                      \"overlap_comm\": false}"),
        std::nullopt, std::nullopt, false };
    if (context.communicationBytes > 0)
        fix.detail += " The communication band holds " + formatBytes(context.communicationBytes) + " at the failure.";
    return fix;
}

Fix gradientAsBucketView(const FixContext& context)
{
    Fix fix { FixKind::GradientAsBucketView, "Make the gradients views of DDP's buckets (gradient_as_bucket_view=True)",
        "With gradient_as_bucket_view=False DDP's Reducer allocates its buckets once, at wrapping, and copies every "
        "gradient into them for the all-reduce: the run holds each gradient twice, for as long as the gradients "
        "live. With True the gradients are views into the buckets and the copy is gone (as PyTorch's DDP "
        "documentation notes, detach_() can then not be called on the gradients).",
        "model = DDP(model, device_ids=[rank], gradient_as_bucket_view=True)", std::nullopt, std::nullopt, false };
    projectSaving(fix, "the bucket copy of the gradients is gone", context.ddpBucketCopyBytes, context);
    return fix;
}

Fix syncGradientsEachMicroBatch(const FixContext& context)
{
    Fix fix { FixKind::SyncGradientsEachMicroBatch, "Reduce-scatter the gradients every micro-batch",
        "Skipping gradient synchronisation for the first micro-batches (FSDP2's set_requires_gradient_sync(False), "
        "no_sync) keeps every layer's unsharded gradient, upcast to the reduce dtype, until the last micro-batch: "
        "a full unsharded gradient per rank. Reducing every micro-batch keeps only the sharded gradient, at the "
        "cost of one reduce-scatter per micro-batch; keeping the unsharded gradient in the compute dtype "
        "(reduce_dtype=bfloat16) halves what is held instead.",
        "model.set_requires_gradient_sync(True)   # every micro-batch, not only the last\n"
        "# or hold less while deferring:\n"
        "fully_shard(block, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16))",
        std::nullopt, std::nullopt, false };
    projectSaving(
        fix, "the unsharded gradients kept between micro-batches are gone", context.deferredGradientBytes, context);
    return fix;
}

Fix shareGraphPool(const FixContext& context)
{
    Fix fix { FixKind::ShareGraphPool, "Capture the graphs into one shared memory pool",
        "Each CUDA graph captured with its own pool keeps that pool's memory for as long as the graph lives, even "
        "what it freed during capture: eager execution would have reused it. Graphs that run one after another "
        "can share one pool.",
        "pool = torch.cuda.graph_pool_handle()\n"
        "with torch.cuda.graph(g1, pool=pool): ...\n"
        "with torch.cuda.graph(g2, pool=pool): ...\n"
        "# make_graphed_callables shares one pool across the callables it is given together",
        std::nullopt, std::nullopt, false };
    if (context.graphPoolBytes > 0)
        fix.detail += " The graphs' private pools reserve " + formatBytes(context.graphPoolBytes) + ".";
    return fix;
}

Fix fewerGraphShapes()
{
    return Fix { FixKind::FewerGraphShapes, "Capture fewer or smaller shapes",
        "Every captured batch size or sequence length is a graph with its own memory; capture the sizes the run "
        "uses (or pad to a few buckets) and the largest only once.",
        "# vLLM\n"
        "LLM(model, cuda_graph_sizes=[1, 2, 4, 8, 16])   # or max_seq_len_to_capture / enforce_eager\n"
        "# torch.compile\n"
        "torch.compile(model, mode=\"reduce-overhead\", dynamic=False)   # and pad inputs to a few shapes",
        std::nullopt, std::nullopt, false };
}

Fix eagerFallback()
{
    return Fix { FixKind::EagerFallback, "Run without CUDA graphs",
        "Eager execution reuses freed memory across the whole program; it costs the launch overhead graphs save.",
        "LLM(model, enforce_eager=True)                      # vLLM\n"
        "torch.compile(model, mode=\"max-autotune-no-cudagraphs\")\n"
        "torch._inductor.config.triton.cudagraphs = False",
        std::nullopt, std::nullopt, false };
}

// During a capture the allocator serves only the graph's private pool and, out of memory, does not
// release cached segments (release_cached_blocks is skipped while captures_underway is not empty):
// what warm-up or eager work left cached, and the pools of graphs still referenced, must be given
// back before the capture starts.
Fix releaseBeforeCapture(const FixContext& context)
{
    Fix fix { FixKind::ReleaseBeforeCapture, "Release the cache and old graphs before capturing",
        "While a capture is underway PyTorch serves it only from the graph's private pool and, when that runs "
        "out, does not free cached segments to retry: memory cached by the warm-up iterations or eager work, and "
        "the pools of graphs still referenced, stay reserved. Empty the cache after the warm-up, and drop the "
        "graphs being replaced (with their static outputs) before capturing their successors.",
        "# after the warm-up iterations, before the capture\n"
        "torch.cuda.synchronize()\n"
        "torch.cuda.empty_cache()\n"
        "with torch.cuda.graph(g): ...\n"
        "\n"
        "# re-capturing: let the old graphs go first\n"
        "self.graphs = None\n"
        "gc.collect(); torch.cuda.empty_cache()\n"
        "self.graphs = self.capture_all()",
        std::nullopt, std::nullopt, false };
    if (context.cacheOutsideCaptureBytes > 0)
        fix.detail += " At the failure " + formatBytes(context.cacheOutsideCaptureBytes)
            + " sat cached outside the capturing pool";
    if (context.otherGraphPoolsBytes > 0)
        fix.detail += std::string(context.cacheOutsideCaptureBytes > 0 ? ", and " : " At the failure ")
            + "the pools of graphs captured before reserved " + formatBytes(context.otherGraphPoolsBytes);
    if (context.cacheOutsideCaptureBytes > 0 || context.otherGraphPoolsBytes > 0)
        fix.detail += ".";
    return fix;
}

Fix offloadCheckpointedInputs(const FixContext& context)
{
    Fix fix { FixKind::OffloadCheckpointedInputs, "Offload the checkpointed inputs to the CPU",
        "Activation checkpointing is already on"
            + (context.checkpointingEvidence.empty() ? std::string() : " (" + context.checkpointingEvidence + ")")
            + ": what stays on the card is each block's input, plus one block's activations while backward "
              "recomputes it. Keeping the inputs in pinned host memory until backward needs them removes the first "
              "part; a smaller micro-batch or shorter sequences shrink both.",
        "from torch.autograd.graph import save_on_cpu\n"
        "with save_on_cpu(pin_memory=True):\n"
        "    loss = model(**batch).loss\n"
        "\n"
        "# FSDP: torch.distributed.algorithms._checkpoint.checkpoint_wrapper.offload_wrapper(block)\n"
        "# Megatron: --cpu-offloading --cpu-offloading-num-layers N",
        std::nullopt, std::nullopt, false };
    // How much of the activations are checkpointed inputs the trace does not tell apart: no saving
    // is claimed.
    return fix;
}

} // namespace

std::optional<Fix> makeDistributedFix(FixKind kind, const FixContext& context)
{
    switch (kind) {
    case FixKind::AvoidRecordStreams:
        return avoidRecordStreams(context);
    case FixKind::Fsdp2:
        return fsdp2();
    case FixKind::SynchronizeBeforeReuse:
        return synchronizeBeforeReuse();
    case FixKind::ReshardAfterForward:
        return reshardAfterForward(context);
    case FixKind::FewerAllGathersInFlight:
        return fewerAllGathersInFlight(context);
    case FixKind::BucketSizes:
        return bucketSizes(context);
    case FixKind::GradientAsBucketView:
        return gradientAsBucketView(context);
    case FixKind::SyncGradientsEachMicroBatch:
        return syncGradientsEachMicroBatch(context);
    case FixKind::ShareGraphPool:
        return shareGraphPool(context);
    case FixKind::FewerGraphShapes:
        return fewerGraphShapes();
    case FixKind::EagerFallback:
        return eagerFallback();
    case FixKind::ReleaseBeforeCapture:
        return releaseBeforeCapture(context);
    case FixKind::OffloadCheckpointedInputs:
        return offloadCheckpointedInputs(context);
    default:
        return std::nullopt;
    }
}

} // namespace oomlens
