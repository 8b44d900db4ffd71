#pragma once

#include "core/planner/memoryplan.h"

namespace oomlens::planner {

// The published estimators' figures for a plan, beside the planner's own (MemoryPlan::estimators):
// Megatron-LM's theoretical_memory_usage.py for model-parallel training, DeepSpeed's
// estimate_zero2_model_states_mem_needs for ZeRO stages 1 and 2. The planner keeps the figure
// that matches the buffers the framework allocates; each entry says why the two differ.
void addEstimatorFigures(const ModelSpec& model, const TrainingSetup& setup, MemoryPlan& plan);

// Megatron-LM's theoretical_memory_usage.py for this model and set-up, in bytes: the most loaded
// shard's weights and optimizer (compute_weight_and_optimizer_memory) and the first stage's
// activations (compute_activation_memory with sequence parallelism and selective recompute,
// compute_activation_memory_without_sp otherwise). Its own formulas: the GPT block's activations
// whatever the model, experts split by TP alone, data parallel without CP.
struct MegatronEstimate
{
    double parametersOnMostLoadedShard = 0;
    double weightAndOptimizerBytes = 0;
    double activationBytes = 0;
};
MegatronEstimate megatronTheoreticalMemory(const ModelSpec& model, const TrainingSetup& setup);

} // namespace oomlens::planner
