#pragma once

#include "core/analysis/distributedstacks.h"
#include "core/analysis/snapshotanalysis.h"

#include <optional>

namespace oomlens {

// The categorizer's rules for what distributed training adds (product.md §3, category
// `communication`): buffers of collectives band as communication, unless the buffer *is* the
// gradient storage; tensors that activation checkpointing recomputes inside backward band as
// activations. Kept apart from the phase rules (categorizer.cpp) so each reads on its own.
struct DistributedVerdict
{
    Category category;
    const char* reason; // a literal: the categorizer interns reasons by address
};

struct DistributedFacts
{
    // AccumulateGrad allocates gradients of their own in this trace: DDP's buckets then hold a
    // copy of them (gradient_as_bucket_view=False); without such allocations the gradients are
    // views of the buckets and the buckets are the gradient storage.
    bool gradientsAllocatedApart = false;
    // Megatron-Core's _ParamAndGradBuffer allocates param_data (only with the distributed
    // optimizer) and then grad_data, a few lines further down the same constructor, in every
    // version: the last line that allocates a buffer is the gradients', an earlier one the
    // parameters'. With one line only, it is grad_data (param_data is the optional one).
    uint32_t gradBufferLine = 0;
    // DeepSpeed's ZeRO-1/2 constructor moves each flattened bf16/fp16 parameter group to the GPU
    // and, further down the same loop, clones this rank's fp32 master partition from it: the
    // last line that allocates is the master partition's, earlier ones the parameters'.
    uint32_t zeroMasterLine = 0;
};

// nullopt: the stack says nothing distributed; the phase rules decide.
// `keptBeyondRun`: the allocation outlived the phase run that made it (freed in a later phase, or
// alive at the dump).
std::optional<DistributedVerdict> distributedVerdict(
    const Allocation& a, DistributedStacks& stacks, const DistributedFacts& facts, Phase born, bool keptBeyondRun);

} // namespace oomlens
