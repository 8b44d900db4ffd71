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
// Model parallelism (Table 2 of the paper): tensor parallelism splits Q, K, V, the attention
// output, the MLP's inner tensors and the scores over t GPUs, and leaves the norms' inputs, the
// projections' inputs and the dropout masks whole (10 + 24/t of 34 per s·b·h); sequence
// parallelism splits those too (34/t). Context parallelism splits the sequence. Selective
// recompute drops the scores. Mixture of experts: a token's MLP tensors once per routed expert
// it visits (top-k, times the capacity factor where given: the busiest rank's bound), plus the
// shared experts' and the router's logits; the dispatch keeps each routed token's input.
//
// Not modelled: unfused norms (Hugging Face's eager LlamaRMSNorm also saves an fp32 copy of its
// input), the causal mask a block builds for itself, the small tensors outside the blocks
// (embedding dropout, the final norm's input), LoRA adapters' own activations (r per token per
// projection), CPU activation offload, the imbalance of dropless expert routing, and allocator
// rounding (see the overhead band).
struct ActivationEstimate
{
    uint64_t perLayerBytes = 0; // one block's saved tensors (the first MoE block's when experts exist)
    uint64_t perDenseLayerBytes = 0; // a block with a dense MLP
    uint64_t perMoeLayerBytes = 0; // a block with experts (0 for a dense model)
    uint64_t layerInputBytes = 0; // what a checkpointed block keeps: its input
    uint64_t scoreBytesPerLayer = 0; // the O(seq²) part of perLayerBytes (eager attention)
    uint64_t savedBytes = 0; // everything saved for backward at the end of forward, blocks and logits
    uint64_t logitsSavedBytes = 0; // the LM head's output and the loss's log-softmax, part of savedBytes
    uint64_t layerGradientBytes = 0; // the largest gradient buffer of one block in backward
    uint64_t logitsGradientBytes = 0; // the loss's gradient
    uint64_t backwardTemporaryBytes = 0; // the larger of the two
};

// Zero everywhere when the model has no dimensions. Tensor, sequence and context parallelism
// come from setup.parallel; pipeline stages are composed from these figures by the planner.
ActivationEstimate estimateActivations(const ModelSpec& model, const TrainingSetup& setup);

// What the blocks [first, first + count) keep at the end of forward for one microbatch under
// the set-up's checkpointing (checkpointed blocks keep only their input; the one block being
// recomputed in backward is not included).
uint64_t keptBlockBytes(
    const ModelSpec& model, const TrainingSetup& setup, const ActivationEstimate& estimate, int first, int count);

} // namespace oomlens::planner
