#pragma once

#include "core/planner/memoryplan.h"

namespace oomlens::planner {

// Training under Megatron-style model parallelism (TP / SP / CP / PP / VPP / EP, the distributed
// optimizer, or ZeRO on top of the data-parallel group), one plan per pipeline stage.
//
// Model states follow Megatron-LM's count (megatron/training/theoretical_memory_usage.py): a
// stage's layers and, on the first stage, the embedding (the last stage the LM head, or the tied
// embedding's copy that Megatron keeps there), split over TP; routed experts split over TP x EP;
// 18 bytes per parameter (2 weights + 4 fp32 main gradients + 12 master weights and Adam), 6 +
// 12/DP with the distributed optimizer, ZeRO's stages over the data-parallel group otherwise.
// Activations: Korthikanti et al. Table 2 per block (activationmodel.h), held for min(PP - k, M)
// microbatches on stage k under 1F1B; under the interleaved schedule for the model chunks Megatron
// warms up, 2(PP - k - 1) + (VPP - 1)·PP + 1 (the first stage's 1 + (PP - 1)/(PP·VPP) penalty).
// The logits live on the last stage. The busiest stage's bands are the plan's.
MemoryPlan planParallel(const ModelSpec& model, const TrainingSetup& setup);

// The vocabulary as Megatron pads it: a multiple of 128 x TP (make_vocab_size_divisible_by).
int megatronPaddedVocab(int vocab, int tensorParallel);

// Parameters on one GPU of pipeline stage `stage` (its layers from `firstLayer`): the dense
// share over TP and the routed experts' over TP x EP.
struct StageShard
{
    uint64_t dense = 0;
    uint64_t experts = 0;
    uint64_t blockLinear = 0; // of dense + experts: the blocks' linear weights (what serving quantizes)
};
StageShard stageShard(const ModelSpec& model, const TrainingSetup& setup, int stage, int firstLayer, int layers);

// The layers of pipeline stage `stage`: an even split, the first stages taking one more when the
// layers do not divide.
int stageLayers(int layers, int pipeline, int stage);

} // namespace oomlens::planner
