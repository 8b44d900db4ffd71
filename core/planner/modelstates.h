#pragma once

#include "core/planner/memoryplan.h"

#include <string>
#include <vector>

namespace oomlens::planner {

// The planner's building blocks, shared by the data-parallel plan (memoryplan.cpp), the
// Megatron-style one (parallelplan.cpp) and serving (servingplan.cpp): the persistent model
// states on one GPU and how the phases of a step stack them with activations.

// Persistent per-GPU model states and what the optimizer step adds for a moment.
struct ModelStates
{
    uint64_t parameters = 0;
    uint64_t gradients = 0;
    uint64_t optimizerState = 0;
    uint64_t gatherBuffer = 0; // ZeRO-3: the largest module gathered whole
    uint64_t optimizerTemporaries = 0;
    uint64_t hostBytes = 0;

    ModelStates& operator+=(const ModelStates& other);
};

uint64_t scaled(uint64_t count, double bytesPerElement);
// A byte figure computed in floating point, saturated at 2^62 (see scaled).
uint64_t saturatedBytes(double bytes);

// Optimizer state per trainable parameter (the moments; no master weights).
double optimizerBytesPerParameter(const ModelSpec& model, const TrainingSetup& setup);

// Full fine-tuning of `parameters` parameters on one GPU, sharded over `shards` GPUs: plain
// PyTorch / DDP (Hugging Face's model-memory anatomy) at ZeRO stage 0, DeepSpeed ZeRO 1-3 as its
// estimators count it otherwise. `largestLayer` is the module ZeRO-3 gathers whole.
ModelStates dataParallelStates(const ModelSpec& model, const TrainingSetup& setup, uint64_t parameters, uint64_t shards,
    uint64_t largestLayer, std::vector<std::string>& notes);

// Megatron-LM's layout of `parameters` parameters on one GPU: 16-bit weights, fp32 main
// gradients, fp32 master weights and the moments: 2 + 4 + 12 = 18 bytes per parameter in mixed
// precision; the distributed optimizer shards the 12 over `shards` GPUs (6 + 12/DP).
ModelStates megatronStates(const ModelSpec& model, const TrainingSetup& setup, uint64_t parameters, uint64_t shards);

// LoRA / QLoRA adapters on a frozen base.
ModelStates adapterStates(const ModelSpec& model, const TrainingSetup& setup, std::vector<std::string>& notes);

// A step's three phases over persistent states and the activations saved at the end of forward.
struct PhaseBands
{
    std::array<BandBytes, 3> byPhase {}; // overhead included
    PeakPhase peakPhase = PeakPhase::Backward;
    uint64_t forwardBytes = 0; // tensors only
    uint64_t backwardBytes = 0;
    uint64_t optimizerStepBytes = 0;
    const BandBytes& peak() const { return byPhase[static_cast<size_t>(peakPhase)]; }
};
PhaseBands composePhases(
    const ModelStates& states, uint64_t savedActivations, uint64_t backwardTemporaries, const TrainingSetup& setup);

} // namespace oomlens::planner
