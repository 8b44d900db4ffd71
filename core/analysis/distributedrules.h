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
};

// nullopt: the stack says nothing distributed; the phase rules decide.
// `keptBeyondRun`: the allocation outlived the phase run that made it (freed in a later phase, or
// alive at the dump).
std::optional<DistributedVerdict> distributedVerdict(
    const Allocation& a, DistributedStacks& stacks, const DistributedFacts& facts, Phase born, bool keptBeyondRun);

} // namespace oomlens
