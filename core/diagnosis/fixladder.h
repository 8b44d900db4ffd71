#pragma once

#include "core/analysis/collectiveframework.h"
#include "core/backend.h"
#include "core/diagnosis.h"
#include "core/diagnosis/fixkind.h"
#include "core/diagnosis/fixladderlora.h"
#include "core/diagnosis/memorybudget.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

struct FixContext
{
    Backend backend = Backend::Cuda;
    bool expandableSegmentsOn = false; // seen in PYTORCH_CUDA_ALLOC_CONF or the snapshot
    bool maxSplitSizeSet = false;
    bool asyncAllocator = false; // backend:cudaMallocAsync
    bool preExpandableTorch = false; // message template from before expandable segments (≤2.0)
    MemoryBudget budget;
    std::optional<uint64_t> caseSavingBytes; // what a case-specific fix frees (retained eval outputs, leaked bytes)
    // Why the case-specific fix fits the run whatever the arithmetic at the failure says: a leak's
    // run without the leak repeats a step that already completed ("step 1 completed under the same
    // limit"). Empty: judged by the budget.
    std::string caseFitsBecause;
    // The reference a leak keeps is one buffer re-made larger every step (torch.cat on a queue never
    // trimmed, growingtensor.h): release_references then says how to bound it.
    bool leakIsGrowingBuffer = false;
    // The failing line is the optimizer's update reading its state (trainingstate.h's
    // updateReadsExistingState): the state exists, so the foreach fix is about the update's
    // temporaries, not about the first step's state.
    bool optimizerStateExists = false;
    uint64_t otherProcessBytes = 0;
    // Activation checkpointing is already on (its frames are in the stacks, or the text's recipe
    // says so): the ladder offers what is left instead of turning it on.
    bool checkpointingOn = false;
    std::string checkpointingEvidence; // "torch/utils/checkpoint.py frames recompute 1.2 GiB in backward"
    // Bytes of the communication band, and how many such buffers are live at the failure.
    uint64_t communicationBytes = 0;
    uint64_t communicationKeptBytes = 0; // what fewer buffers in flight would free
    uint64_t ddpBucketCopyBytes = 0; // DDP buckets holding a second copy of the gradients
    uint64_t deferredGradientBytes = 0; // unsharded gradients kept for a deferred reduce-scatter
    // Whose collectives' buffers those are: their fixes are said in that framework's settings only.
    CollectiveFramework collectiveFramework = CollectiveFramework::Unknown;
    // Bytes held by pending frees that a fix of their cause makes reusable.
    uint64_t pendingFreeBytes = 0;
    uint64_t graphPoolBytes = 0; // reserved by CUDA graphs' private pools
    // Failing inside a capture: cache outside the capturing pool, and pools of other graphs still alive.
    uint64_t cacheOutsideCaptureBytes = 0;
    uint64_t otherGraphPoolsBytes = 0;
    std::optional<uint64_t> allowedBytes;
    // The layers a LoRA adapter would wrap in the model the stacks show; none: the rung is left out.
    LoraTarget lora;
};

// The fix, or nothing when the inputs show it is already in place (expandable segments on).
std::optional<Fix> makeFix(FixKind kind, const FixContext& context);

// The fixes that remove a specific cause (casefixes.cpp); makeFix forwards to it.
std::optional<Fix> makeCaseFix(FixKind kind, const FixContext& context);

// The fixes for pending frees, collectives' buffers, CUDA graphs and checkpointing that is already
// on (distributedfixes.cpp); makeFix forwards to it.
std::optional<Fix> makeDistributedFix(FixKind kind, const FixContext& context);

// The fixes for a process the host's OOM killer ended (hostmemoryfixes.cpp); makeFix forwards to it.
std::optional<Fix> makeHostMemoryFix(FixKind kind, const FixContext& context);

// Fixes in the given order, skipping those ruled out and duplicates already in `fixes`.
void appendFixes(std::vector<Fix>& fixes, std::initializer_list<FixKind> kinds, const FixContext& context);

// The whole ladder, for a failure whose cause the inputs do not narrow down.
void appendLadder(std::vector<Fix>& fixes, const FixContext& context);

} // namespace oomlens
