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
// with temporaries) plus what no tensor accounts for.
enum class Band { Parameters, Gradients, OptimizerState, Activations, Temporaries, Overhead };
constexpr int bandCount = 6;
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
};

MemoryPlan planMemory(const ModelSpec& model, const TrainingSetup& setup);

// Per-GPU bytes of a set-up: the formula's, or one projected from a measured run.
using PlanTotal = std::function<uint64_t(const TrainingSetup&)>;
PlanTotal formulaTotal(const ModelSpec& model);

// The largest micro-batch whose plan fits `capacityBytes` (0 when even one sample does not,
// -1 when activations are not modelled, so the batch changes nothing).
int maxMicroBatch(const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total);
// The same for the sequence length, in steps of 128 tokens.
int maxSequence(const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total);

} // namespace oomlens::planner
