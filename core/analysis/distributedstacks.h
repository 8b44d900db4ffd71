#pragma once

#include "core/analysis/collectiveframework.h"
#include "core/snapshot.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// What a call stack says about the machinery distributed training adds around the model: the
// collectives' buffers and activation checkpointing. Read from file and function names only, as
// PyTorch, FSDP/FSDP2, DDP, DeepSpeed ZeRO and Megatron-LM name them; computed once per stack.
enum class CommunicationKind : uint8_t {
    None,
    // FSDP's unshard (flat parameter all-gather), FSDP2's foreach_all_gather outputs, ZeRO-3's
    // parameter all-gather, functional collectives' outputs, Megatron's sequence-parallel gathers.
    AllGather,
    // FSDP's and FSDP2's reduce-scatter inputs (padded unsharded gradients), Megatron's
    // reduce-scatter along the sequence.
    ReduceScatter,
    // DDP's Reducer buckets: gradients are copied into them unless gradient_as_bucket_view=True.
    DdpBucket,
    // DeepSpeed ZeRO-1/2/3's IPG (independent partition gradient) buckets and their reduce path.
    ZeroBucket,
    // The IPG buffer itself: ZeRO-1/2's backward allocates it with torch.empty(reduce_bucket_size)
    // before running autograd (two of them with overlap_comm), so its size is the setting, not the model.
    ZeroIpgBuffer,
    // An unsharded gradient kept in the reduce dtype until a later micro-batch reduce-scatters it
    // (FSDP2's set_requires_gradient_sync(False): FSDPParam.to_accumulated_grad_if_needed).
    DeferredGradient,
    // Memory registered for NCCL: ncclMemAlloc'd MemPools, symmetric memory.
    NcclPool,
    // Not a collective's buffer: this rank's shard of the parameters, made by FSDP2's fully_shard
    // (FSDPParam._init_sharded_param). It is the parameters' storage on this rank.
    ShardedParameter,
    // Not a collective's buffer either: Megatron-Core's contiguous param-and-grad buffer
    // (_ParamAndGradBuffer), the storage every parameter's .data (param_data, with the distributed
    // optimizer) or .main_grad (grad_data) is a view of, whatever collective later runs on it.
    // Which of the two one allocation is, the line that made it says (constructorLine).
    ContiguousBuffer,
    // What DeepSpeed's ZeRO-1/2 optimizer allocates in its constructor itself: each parameter
    // group flattened into one bf16/fp16 buffer the parameters become views of (the parameters'
    // storage), then this rank's fp32 master partition cloned from it (optimizer state, as the
    // ZeRO paper counts master weights). Which of the two, the line says (constructorLine).
    ZeroOptimizerInit,
    // ZeRO-3's fp32 master partitions (DeepSpeedZeroOptimizer_Stage3._create_fp32_partitions).
    ZeroMasterPartition,
};

enum DistributedStackBit : uint8_t {
    // A frame of an activation-checkpointing implementation (torch.utils.checkpoint, FSDP's
    // checkpoint_wrapper, Megatron's and DeepSpeed's CheckpointFunction): checkpointing is on.
    StackCheckpointing = 1u << 0,
    // Inside the recomputation backward runs: CheckpointFunction.backward, the non-reentrant
    // variant's unpack hook / recompute_fn, with the model's forward frames inside it.
    StackRecompute = 1u << 1,
    // Inside CUDA graph capture: torch.cuda.graph / make_graphed_callables, Inductor's cudagraph
    // trees, an engine's capture_model.
    StackGraphCapture = 1u << 2,
};

class DistributedStacks
{
public:
    explicit DistributedStacks(const Snapshot& snapshot);

    CommunicationKind communication(StackId stack);
    // The line of the constructor frame for a ContiguousBuffer or ZeroOptimizerInit stack, 0 otherwise.
    uint32_t constructorLine(StackId stack) { return entry(stack).bufferLine; }
    uint8_t bits(StackId stack);
    CollectiveFramework framework(StackId stack) { return entry(stack).framework; }
    bool checkpointing(StackId stack) { return bits(stack) & StackCheckpointing; }
    bool recompute(StackId stack) { return bits(stack) & StackRecompute; }
    bool graphCapture(StackId stack) { return bits(stack) & StackGraphCapture; }

private:
    struct Entry
    {
        CommunicationKind kind = CommunicationKind::None;
        CollectiveFramework framework = CollectiveFramework::Unknown;
        uint8_t bits = 0;
        bool computed = false;
        uint32_t bufferLine = 0;
    };
    const Entry& entry(StackId stack);
    // What one frame says, computed once per frame: stacks share most of their frames.
    struct FrameFacts
    {
        CommunicationKind kind = CommunicationKind::None;
        bool decidesCommunication = false; // a collective's frame, or the storage itself
        // The frame decides only as the innermost Python frame: it allocates the buffer itself, while
        // the Python frames it calls (autograd, the model) allocate everything else under it.
        bool decidesOnlyInnermost = false;
        bool python = false;
        bool checkpointing = false;
        bool recompute = false;
        bool graphCapture = false;
        bool forward = false;
        bool computed = false;
        CollectiveFramework framework = CollectiveFramework::Unknown;
        uint32_t bufferLine = 0; // the frame's line, for a ContiguousBuffer or ZeroOptimizerInit verdict
    };
    const FrameFacts& frameFacts(FrameId frame);

    const Snapshot& m_snapshot;
    std::vector<Entry> m_stacks;
    std::vector<FrameFacts> m_frames;
};

// "FSDP all-gather output", "DDP bucket", ...
const char* communicationKindText(CommunicationKind kind);

} // namespace oomlens
