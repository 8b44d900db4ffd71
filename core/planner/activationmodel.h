#pragma once

#include "core/planner/modelspec.h"
#include "core/planner/trainingsetup.h"

#include <cstdint>

namespace oomlens::planner {

// What the forward pass saves for backward, per GPU, following Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models"): one GPT block saves
// s·b·h·(34 + 5·a·s/h) bytes in 16-bit with dropout. Generalized here to grouped-query
// attention (K and V are kv_heads wide; eager attention saves them repeated to every head),
// gated MLPs (SwiGLU saves gate, up, activation and product), fp32 (4-byte elements), models
// without dropout (no masks), the norms' fp32 statistics, and SDPA / FlashAttention (no a·s²
// scores: only the fp32 log-sum-exp per query). Validated per block against the scenario
// snapshots in tests/core/tst_activationvalidation.cpp.
//
// Not modelled: tensor/sequence/pipeline parallelism, unfused norms (Hugging Face's eager
// LlamaRMSNorm also saves an fp32 copy of its input), the causal mask a block builds for itself, mixture-of-experts
// routing, the small tensors outside the blocks (embedding dropout, the final norm's input), LoRA adapters' own
// activations (r per token per projection), CPU activation offload, selective checkpointing, and allocator rounding
// (see the overhead band).
struct ActivationEstimate
{
    uint64_t perLayerBytes = 0; // one block's saved tensors
    uint64_t scoreBytesPerLayer = 0; // the O(seq²) part of perLayerBytes (eager attention)
    uint64_t savedBytes = 0; // everything saved for backward at the end of forward, blocks and logits
    uint64_t logitsSavedBytes = 0; // the LM head's output and the loss's log-softmax, part of savedBytes
    uint64_t backwardTemporaryBytes = 0; // the largest gradient buffer alive at once in backward
};

// Zero everywhere when the model has no dimensions.
ActivationEstimate estimateActivations(const ModelSpec& model, const TrainingSetup& setup);

} // namespace oomlens::planner
