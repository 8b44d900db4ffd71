#include "core/analysis/distributedrules.h"

namespace oomlens {

std::optional<DistributedVerdict> distributedVerdict(
    const Allocation& a, DistributedStacks& stacks, const DistributedFacts& facts, Phase born, bool keptBeyondRun)
{
    if (stacks.recompute(a.stack)) {
        if (keptBeyondRun)
            return DistributedVerdict { Category::Activations,
                "recomputed by activation checkpointing inside backward (the forward re-run under "
                "torch.utils.checkpoint's frames) and kept beyond that backward" };
        return DistributedVerdict { Category::Activations,
            "recomputed by activation checkpointing inside backward (the forward re-run under "
            "torch.utils.checkpoint's frames), freed by backward" };
    }
    switch (stacks.communication(a.stack)) {
    case CommunicationKind::None:
        return std::nullopt;
    case CommunicationKind::AllGather:
        return DistributedVerdict { Category::Communication,
            "all-gather output of a collective (FSDP/FSDP2 unshard, ZeRO-3 parameter fetch, a "
            "gather along the sequence): the unsharded copy exists only to bring other ranks' shards here" };
    case CommunicationKind::ReduceScatter:
    case CommunicationKind::ZeroBucket:
        // The reduction's output that outlives backward is the sharded gradient the optimizer
        // reads: the gradient storage, not a buffer.
        if (born == Phase::Backward && keptBeyondRun)
            return DistributedVerdict { Category::Gradients,
                "written by the gradient reduction (reduce-scatter / ZeRO) and kept until the optimizer step: "
                "the sharded gradient itself" };
        if (stacks.communication(a.stack) == CommunicationKind::ZeroBucket)
            return DistributedVerdict { Category::Communication,
                "DeepSpeed ZeRO IPG bucket or reduction buffer: gradients are gathered in it to be reduced "
                "across ranks" };
        return DistributedVerdict { Category::Communication,
            "reduce-scatter input (the padded unsharded gradient FSDP reduces across ranks), "
            "freed once the collective is done" };
    case CommunicationKind::ZeroIpgBuffer:
        // Whatever its lifetime: it is reused bucket after bucket and never becomes a gradient.
        return DistributedVerdict { Category::Communication,
            "DeepSpeed ZeRO IPG buffer, allocated at reduce_bucket_size elements when backward starts (a second "
            "one with overlap_comm): gradients are copied into it to be reduced across ranks" };
    case CommunicationKind::DeferredGradient:
        return DistributedVerdict { Category::Communication,
            "unsharded gradient upcast to the reduce dtype and kept until a later micro-batch reduce-scatters it "
            "(FSDP2 with set_requires_gradient_sync(False)): the reduce-scatter's input, deferred" };
    case CommunicationKind::DdpBucket:
        if (!facts.gradientsAllocatedApart)
            return DistributedVerdict { Category::Gradients,
                "DDP bucket whose views are the gradients (no gradient is allocated apart from the buckets: "
                "gradient_as_bucket_view=True): the gradient storage" };
        return DistributedVerdict { Category::Communication,
            "DDP bucket the gradients are copied into for the all-reduce (gradients are also allocated "
            "apart: gradient_as_bucket_view=False)" };
    case CommunicationKind::NcclPool:
        return DistributedVerdict { Category::Communication,
            "memory registered for NCCL (ncclMemAlloc MemPool, symmetric memory)" };
    case CommunicationKind::ContiguousBuffer:
        if (stacks.constructorLine(a.stack) >= facts.gradBufferLine)
            return DistributedVerdict { Category::Gradients,
                "Megatron-Core's contiguous gradient buffer (_ParamAndGradBuffer.grad_data): every parameter's "
                "main_grad is a view of it, and the gradient reduction runs on it in place" };
        return DistributedVerdict { Category::Parameters,
            "Megatron-Core's contiguous parameter buffer (_ParamAndGradBuffer.param_data, made with the "
            "distributed optimizer): every parameter's .data is a view of it" };
    case CommunicationKind::ZeroOptimizerInit:
        if (stacks.constructorLine(a.stack) >= facts.zeroMasterLine)
            return DistributedVerdict { Category::OptimizerState,
                "DeepSpeed ZeRO's fp32 master partition (single_partition_of_fp32_groups), cloned from this "
                "rank's share of the flat parameters: master weights are optimizer state" };
        return DistributedVerdict { Category::Parameters,
            "DeepSpeed ZeRO's flat parameter buffer (bit16_groups_flat): every parameter of the group is a "
            "view of it" };
    case CommunicationKind::ZeroMasterPartition:
        return DistributedVerdict { Category::OptimizerState,
            "DeepSpeed ZeRO-3's fp32 master partition (_create_fp32_partitions): master weights are optimizer "
            "state" };
    case CommunicationKind::ShardedParameter:
        return DistributedVerdict { Category::Parameters,
            "this rank's shard of a parameter, made by FSDP2's fully_shard (FSDPParam._init_sharded_param): the "
            "parameters' storage" };
    }
    return std::nullopt;
}

} // namespace oomlens
