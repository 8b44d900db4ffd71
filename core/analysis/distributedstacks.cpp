#include "core/analysis/distributedstacks.h"

#include "core/analysis/framewords.h"
#include "core/strings.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

namespace {

// What one frame decides about the collectives, innermost frame first. `Storage` stops the search:
// the buffer is the gradient or parameter storage itself (Megatron's contiguous param-and-grad
// buffer), whatever collective runs on it later.
enum class FrameVerdict : uint8_t { Undecided, Storage, Decided, DecidedIfInnermost };

// A frame's verdict as the per-framework readers below give it: the kind it names, if any.
struct FrameReading
{
    FrameVerdict verdict = FrameVerdict::Undecided;
    CommunicationKind kind {};
};

FrameReading decided(CommunicationKind kind)
{
    return { FrameVerdict::Decided, kind };
}

FrameReading decidedIfInnermost(CommunicationKind kind)
{
    return { FrameVerdict::DecidedIfInnermost, kind };
}

// FSDP (FlatParamHandle.unshard, _runtime_utils._unshard / _reduce_grad) and FSDP2
// (torch.distributed._composable.fsdp, later torch.distributed.fsdp._fully_shard).
FrameReading fsdpCommunication(bool fsdp2, std::string_view name)
{
    // FSDP2 without gradient sync (set_requires_gradient_sync(False)) upcasts each unsharded
    // gradient to reduce_dtype and keeps it for the micro-batch that will reduce-scatter it.
    if (fsdp2 && (name == "to_accumulated_grad_if_needed" || name == "accumulate_unsharded_grad_if_needed"))
        return decided(CommunicationKind::DeferredGradient);
    // fully_shard replaces each parameter by its shard, copied out of the full tensor
    // (_init_sharded_param; reset_sharded_param after a load or a .to()).
    if (fsdp2 && (name == "_init_sharded_param" || name == "reset_sharded_param"))
        return decided(CommunicationKind::ShardedParameter);
    // fully_shard itself allocating (its FSDPParam construction inlined, no Python frame
    // inside) makes the same shards; what it calls (the module's own init) is not.
    if (fsdp2 && name == "fully_shard")
        return decidedIfInnermost(CommunicationKind::ShardedParameter);
    if (contains(name, "reduce") || name == "post_backward")
        return decided(CommunicationKind::ReduceScatter);
    if (contains(name, "all_gather") || contains(name, "unshard") || contains(name, "prefetch"))
        return decided(CommunicationKind::AllGather);
    return {};
}

FrameReading c10dCommunication(std::string_view name)
{
    if (contains(name, "reduce_scatter"))
        return decided(CommunicationKind::ReduceScatter);
    if (contains(name, "all_gather"))
        return decided(CommunicationKind::AllGather);
    return {};
}

// DeepSpeed ZeRO: stage 1/2 IPG buckets and their reduction; stage 3's parameter all-gather
// (partition_parameters, the parameter coordinator's fetch) and its gradient reduction.
FrameReading zeroCommunication(std::string_view file, std::string_view name)
{
    // The optimizers' own state, made where the optimizer is constructed: only what the
    // constructor allocates itself (its helpers and the first optimizer step run under it).
    if (inPackage(file, "deepspeed/runtime/zero/stage_1_and_2.py") && name == "__init__")
        return decidedIfInnermost(CommunicationKind::ZeroOptimizerInit);
    if (inPackage(file, "deepspeed/runtime/zero/stage3.py") && name == "_create_fp32_partitions")
        return decided(CommunicationKind::ZeroMasterPartition);
    // ZeRO-1/2's backward allocates the IPG buffers (torch.empty(reduce_bucket_size), a second one
    // with overlap_comm) and then runs the loss's backward under the same frame: only what it
    // allocates itself, with no Python frame inside, is the bucket.
    if (inPackage(file, "deepspeed/runtime/zero/stage_1_and_2.py")
        && (name == "backward" || name == "backward_prologue" || name == "_backward_prologue"))
        return decidedIfInnermost(CommunicationKind::ZeroIpgBuffer);
    if (contains(name, "all_gather") || contains(name, "allgather") || contains(name, "fetch_sub_module"))
        return decided(CommunicationKind::AllGather);
    if (contains(name, "ipg") || contains(name, "reduce") || contains(name, "average_tensor")
        || contains(name, "partition_grads") || contains(name, "buffered"))
        return decided(CommunicationKind::ZeroBucket);
    return {};
}

// Megatron-LM: the contiguous param-and-grad buffer *is* the storage (main_grad, the
// parameters): its constructor allocates it (grad_buffer.py before Megatron-Core 0.6 held the
// gradients only); whatever else runs in those files works on views of it. The
// sequence/tensor-parallel mappings gather and scatter along a dimension.
std::optional<FrameReading> megatronCommunication(std::string_view file, std::string_view name)
{
    if (inPackage(file, "megatron/core/distributed/param_and_grad_buffer.py")
        || inPackage(file, "megatron/core/distributed/grad_buffer.py")) {
        if (name == "__init__")
            return decided(CommunicationKind::ContiguousBuffer);
        return FrameReading { FrameVerdict::Storage, {} };
    }
    if (inPackage(file, "megatron/core/tensor_parallel/mappings.py")) {
        if (contains(name, "reduce_scatter"))
            return decided(CommunicationKind::ReduceScatter);
        if (contains(name, "gather"))
            return decided(CommunicationKind::AllGather);
    }
    return std::nullopt;
}

FrameReading readCommunication(std::string_view file, std::string_view name)
{
    const bool fsdp2 = inPackage(file, "torch/distributed/_composable/fsdp/")
        || inPackage(file, "torch/distributed/fsdp/_fully_shard/");
    if (fsdp2 || inPackage(file, "torch/distributed/fsdp/"))
        return fsdpCommunication(fsdp2, name);
    if (inPackage(file, "torch/distributed/_functional_collectives.py")
        || inPackage(file, "torch/distributed/distributed_c10d.py"))
        return c10dCommunication(name);
    if (inPackage(file, "torch/distributed/_symmetric_memory") || contains(name, "ncclMemAlloc"))
        return decided(CommunicationKind::NcclPool);
    // DDP: the Reducer's buckets are made when the module is wrapped and rebuilt after the first
    // iteration in the order gradients became ready.
    if (contains(name, "Reducer::initialize_buckets") || contains(name, "Reducer::rebuild_buckets")
        || (inPackage(file, "torch/nn/parallel/distributed.py")
            && (name == "_ddp_init_helper" || name == "_rebuild_buckets")))
        return decided(CommunicationKind::DdpBucket);
    if (inPackage(file, "deepspeed/runtime/zero/"))
        return zeroCommunication(file, name);
    return megatronCommunication(file, name).value_or(FrameReading {});
}

FrameVerdict communicationOf(std::string_view file, std::string_view name, CommunicationKind& kind)
{
    const FrameReading reading = readCommunication(file, name);
    if (reading.verdict == FrameVerdict::Decided || reading.verdict == FrameVerdict::DecidedIfInnermost)
        kind = reading.kind;
    return reading.verdict;
}

CollectiveFramework frameworkOf(std::string_view file, std::string_view name)
{
    if (inPackage(file, "torch/distributed/_composable/fsdp/")
        || inPackage(file, "torch/distributed/fsdp/_fully_shard/"))
        return CollectiveFramework::Fsdp2;
    if (inPackage(file, "torch/distributed/fsdp/"))
        return CollectiveFramework::Fsdp1;
    if (inPackage(file, "deepspeed/"))
        return CollectiveFramework::DeepSpeed;
    if (inPackage(file, "megatron/core/"))
        return CollectiveFramework::Megatron;
    if (inPackage(file, "torch/nn/parallel/distributed.py") || contains(name, "c10d::Reducer::"))
        return CollectiveFramework::Ddp;
    return CollectiveFramework::Unknown;
}

bool isGraphCaptureFrame(std::string_view file, std::string_view name)
{
    return inPackage(file, "torch/cuda/graphs.py") || inPackage(file, "torch/_inductor/cudagraph_trees.py")
        || contains(name, "CUDAGraph::capture") || name == "capture_model" || contains(file, "cuda_graph_runner")
        || (contains(name, "capture") && contains(name, "graph"));
}

} // namespace

DistributedStacks::DistributedStacks(const Snapshot& snapshot)
    : m_snapshot(snapshot)
{
    if (snapshot.frames) {
        m_stacks.resize(snapshot.frames->stackCount());
        m_frames.resize(snapshot.frames->frameCount());
    }
}

const DistributedStacks::FrameFacts& DistributedStacks::frameFacts(FrameId id)
{
    FrameFacts& f = m_frames[id.value];
    if (f.computed)
        return f;
    f.computed = true;
    const Frame& frame = m_snapshot.frames->frame(id);
    const std::string_view name = m_snapshot.strings->get(frame.name);
    const std::string_view file = m_snapshot.strings->get(frame.filename);
    const FrameVerdict verdict = communicationOf(file, name, f.kind);
    f.decidesCommunication = verdict != FrameVerdict::Undecided;
    if (f.kind == CommunicationKind::ContiguousBuffer || f.kind == CommunicationKind::ZeroOptimizerInit)
        f.bufferLine = static_cast<uint32_t>(std::max(frame.line, 1));
    f.decidesOnlyInnermost = verdict == FrameVerdict::DecidedIfInnermost;
    f.python = isPythonFile(file);
    const uint32_t words = frameWords(file, name);
    f.checkpointing = words & WordCheckpointing;
    f.recompute = words & WordRecompute;
    f.graphCapture = isGraphCaptureFrame(file, name);
    // The model's forward: a module call or a function named forward, not checkpointing's own.
    f.forward = (words & (WordModuleCall | WordForwardName)) && !f.checkpointing;
    f.framework = frameworkOf(file, name);
    return f;
}

const DistributedStacks::Entry& DistributedStacks::entry(StackId stack)
{
    static const Entry empty;
    if (!stack.isValid() || stack.value >= m_stacks.size())
        return empty;
    Entry& e = m_stacks[stack.value];
    if (e.computed)
        return e;
    e.computed = true;
    bool communicationDecided = false;
    bool forwardInside = false; // a model forward frame seen inside (innermost of) the frames so far
    bool pythonInside = false; // a Python frame seen inside
    for (FrameId id : m_snapshot.frames->stack(stack)) {
        const FrameFacts& f = frameFacts(id);
        if (!communicationDecided && f.decidesCommunication && !(f.decidesOnlyInnermost && pythonInside)) {
            communicationDecided = true;
            e.kind = f.kind;
            e.bufferLine = f.bufferLine;
        }
        pythonInside |= f.python;
        if (e.framework == CollectiveFramework::Unknown)
            e.framework = f.framework;
        if (f.checkpointing)
            e.bits |= StackCheckpointing;
        // The recomputation is the model's forward run *inside* backward's checkpoint frame; the
        // reentrant variant's own autograd.backward call under the same frame is backward's work.
        if (f.recompute && forwardInside)
            e.bits |= StackRecompute;
        if (f.graphCapture)
            e.bits |= StackGraphCapture;
        if (f.forward)
            forwardInside = true;
    }
    return e;
}

CommunicationKind DistributedStacks::communication(StackId stack)
{
    return entry(stack).kind;
}

uint8_t DistributedStacks::bits(StackId stack)
{
    return entry(stack).bits;
}

const char* communicationKindText(CommunicationKind kind)
{
    switch (kind) {
    case CommunicationKind::AllGather:
        return "all-gather output";
    case CommunicationKind::ReduceScatter:
        return "reduce-scatter input";
    case CommunicationKind::DdpBucket:
        return "DDP bucket";
    case CommunicationKind::ZeroBucket:
        return "ZeRO IPG bucket";
    case CommunicationKind::ZeroIpgBuffer:
        return "ZeRO IPG buffer (reduce_bucket_size)";
    case CommunicationKind::DeferredGradient:
        return "unsharded gradient kept for a deferred reduce-scatter";
    case CommunicationKind::NcclPool:
        return "NCCL-registered buffer";
    case CommunicationKind::ShardedParameter:
        return "sharded parameter";
    case CommunicationKind::ContiguousBuffer:
        return "Megatron param-and-grad buffer";
    case CommunicationKind::ZeroOptimizerInit:
        return "ZeRO flat parameters or fp32 master partition";
    case CommunicationKind::ZeroMasterPartition:
        return "ZeRO-3 fp32 master partition";
    case CommunicationKind::None:
        break;
    }
    return "no collective";
}

} // namespace oomlens
