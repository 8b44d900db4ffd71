#pragma once

#include "core/planner/activationmodel.h"
#include "core/planner/modelspec.h"
#include "core/planner/trainingsetup.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::planner {

// The planner's bands: the timeline's categories (inputs counted with activations, unknown
// with temporaries, the KV cache when serving) plus what no tensor accounts for, last.
enum class Band { Parameters, Gradients, OptimizerState, Activations, Temporaries, KvCache, Overhead };
constexpr int bandCount = 7;
using BandBytes = std::array<uint64_t, bandCount>; // indexed by Band

// The JSON keys of per_gpu_bytes (product.md §5): "parameters", "optimizer_state", ...
std::string_view bandName(Band band);
uint64_t bandTotal(const BandBytes& bands);

enum class PeakPhase { Forward, Backward, OptimizerStep };
std::string_view peakPhaseName(PeakPhase phase); // "forward", "backward", "optimizer_step"

// Assumptions the overhead band is built from; calibration replaces the slack with a
// measured one.
constexpr uint64_t cudaContextBytes = 512ull * 1024 * 1024; // CUDA context and kernels, outside PyTorch's reserve
constexpr double allocatorSlackFraction = 0.08; // reserved but unallocated at the peak: seed 000's 5-15%

// One pipeline stage: a GPU of it (every tensor-parallel rank of a stage holds the same).
struct StageMemory
{
    int stage = 0;
    int firstLayer = 0;
    int layers = 0;
    bool embedding = false; // the input embedding lives here (the first stage)
    bool outputLayer = false; // the LM head, the final norm and the loss (the last stage)
    uint64_t parameters = 0; // on one GPU: its share of the stage's dense weights and of its experts
    // Microbatches whose activations the stage holds at once: 1F1B keeps min(PP - stage, M);
    // interleaved, model chunks of a microbatch (each 1/VPP of the stage's layers).
    int inFlight = 0;
    double inFlightLayers = 0; // layers' worth of one microbatch's activations held at once
    std::array<BandBytes, 3> byPhase {};
    BandBytes perGpu {}; // at the stage's peak phase
    uint64_t totalPerGpu = 0;
    PeakPhase peakPhase = PeakPhase::Backward;
};

// A published estimator's figure for the same set-up, beside the planner's, and why they differ.
struct EstimatorFigure
{
    std::string id; // "megatron", "deepspeed_zero2", "deepspeed_zero3"
    std::string source; // "Megatron-LM theoretical_memory_usage.py", ...
    uint64_t bytes = 0; // what the estimator says (its own scope: model states, or model states and activations)
    uint64_t plannerBytes = 0; // the planner's figure for the same scope
    std::string scope; // "model states", "model states and activations"
    std::string reason; // why the two differ, or that they agree
};

// Serving: what the weights, the KV cache and the forward's workspace take on one GPU.
struct ServingMemory
{
    uint64_t weightBytes = 0; // per GPU, at the serving format
    uint64_t kvBytesPerToken = 0; // per GPU
    uint64_t kvCacheBytes = 0; // for the set-up's sequences x tokens
    uint64_t activationBytes = 0; // the forward's peak workspace for one step of the batch
    uint64_t fixedBytes = 0; // everything but the KV cache, overhead included
};

// One GPU's memory over a training step for a model and set-up.
struct MemoryPlan
{
    uint64_t parameterCount = 0; // the whole model
    uint64_t trainableParameters = 0; // LoRA adapters only, with --lora-rank
    uint64_t largestLayerParameters = 0;
    BandBytes perGpu {}; // at the peak phase; adds up to totalPerGpu
    uint64_t totalPerGpu = 0;
    PeakPhase peakPhase = PeakPhase::Backward;
    // Tensor bytes (without overhead) at the end of forward, the end of backward and during the
    // optimizer step.
    uint64_t forwardBytes = 0;
    uint64_t backwardBytes = 0;
    uint64_t optimizerStepBytes = 0;
    std::array<BandBytes, 3> byPhase {}; // the bands at each phase's high point, overhead included
    uint64_t hostBytes = 0; // per node: offloaded state, pinned buffers, the model loaded at start
    // Paged optimizers (bitsandbytes' PagedAdamW8bit): the part of optimizerState that lives in
    // CUDA unified memory. It is counted on the GPU (where it sits until memory runs short); the
    // driver can page all of it to host memory under pressure, so hostBytes can back it.
    uint64_t pageableBytes = 0;
    bool activationsModelled = false; // false without layers/hidden/heads
    ActivationEstimate activations;
    std::vector<std::string> notes; // assumptions worth saying next to the numbers

    // Model parallelism (empty / 1 without it): every pipeline stage, the busiest of which gives
    // the bands above, and the data-parallel degrees the states are sharded over.
    std::vector<StageMemory> stages;
    int busiestStage = 0;
    int dataParallel = 1;
    int expertDataParallel = 1;
    uint64_t parametersPerGpu = 0; // on the busiest GPU
    std::vector<EstimatorFigure> estimators;
    bool serving = false;
    ServingMemory servingMemory;
};

MemoryPlan planMemory(const ModelSpec& model, const TrainingSetup& setup);

// Adds the CUDA context and the allocator's slack to a phase's tensor bands.
BandBytes withOverhead(BandBytes bands);

// Per-GPU bytes of a set-up: the formula's, or one projected from a measured run.
using PlanTotal = std::function<uint64_t(const TrainingSetup&)>;
PlanTotal formulaTotal(const ModelSpec& model);

// The largest micro-batch whose plan fits `capacityBytes` (0 when even one sample does not,
// -1 when activations are not modelled, so the batch changes nothing).
int maxMicroBatch(const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total);
// The same for the sequence length, in steps of 128 tokens.
int maxSequence(const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total);

} // namespace oomlens::planner
