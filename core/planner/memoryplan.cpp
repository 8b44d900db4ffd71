#include "core/planner/memoryplan.h"

#include "core/planner/estimatorfigures.h"
#include "core/planner/modelstates.h"
#include "core/planner/parallelplan.h"
#include "core/planner/servingplan.h"

#include <algorithm>
#include <numeric>

namespace oomlens::planner {

namespace {

constexpr std::array<std::string_view, bandCount> bandNames { "parameters", "gradients", "optimizer_state",
    "activations", "temporaries", "kv_cache", "overhead" };

} // namespace

std::string_view bandName(Band band)
{
    return bandNames[static_cast<size_t>(band)];
}

uint64_t bandTotal(const BandBytes& bands)
{
    return std::accumulate(bands.begin(), bands.end(), uint64_t { 0 });
}

std::string_view peakPhaseName(PeakPhase phase)
{
    switch (phase) {
    case PeakPhase::Forward:
        return "forward";
    case PeakPhase::Backward:
        return "backward";
    case PeakPhase::OptimizerStep:
        return "optimizer_step";
    }
    return "backward";
}

MemoryPlan planMemory(const ModelSpec& model, const TrainingSetup& setup)
{
    if (setup.inference)
        return planServing(model, setup);
    if (setup.parallel.any())
        return planParallel(model, setup);
    MemoryPlan plan;
    plan.parameterCount = model.totalParameters();
    plan.largestLayerParameters = model.largestLayerParameters();
    const ModelStates states = setup.loraRank > 0
        ? adapterStates(model, setup, plan.notes)
        : dataParallelStates(model, setup, plan.parameterCount, static_cast<uint64_t>(setup.totalGpus()),
            plan.largestLayerParameters, plan.notes);
    plan.trainableParameters
        = setup.loraRank > 0 ? model.loraParameters(setup.loraRank, setup.loraTargets) : plan.parameterCount;
    plan.parametersPerGpu = plan.parameterCount;
    plan.dataParallel = setup.totalGpus();
    plan.expertDataParallel = setup.totalGpus();
    plan.hostBytes = states.hostBytes;
    if (setup.optimizer == OptimizerKind::AdamW8bitPaged && setup.offload == Offload::None) {
        // Only the 8-bit moments are paged (cudaMallocManaged, outside PyTorch's caching
        // allocator, so a snapshot never shows them); fp32 master weights stay ordinary memory.
        const uint64_t shards
            = setup.zeroStage > 0 && setup.loraRank == 0 ? static_cast<uint64_t>(setup.totalGpus()) : 1;
        plan.pageableBytes = std::min(states.optimizerState, scaled(plan.trainableParameters, 2.0) / shards);
        plan.hostBytes += plan.pageableBytes * static_cast<uint64_t>(setup.gpusPerNode);
        plan.notes.push_back("Paged 8-bit AdamW keeps its moments in CUDA unified memory: counted on the GPU, "
                             "paged to host memory (counted there too) when the GPU runs short, at a cost in speed; "
                             "a memory snapshot does not show them.");
    }
    plan.activationsModelled = model.hasDimensions();
    if (plan.activationsModelled)
        plan.activations = estimateActivations(model, setup);
    else
        plan.notes.push_back("Activations need the layers, hidden size and heads (--layers, --hidden, --heads or a "
                             "config.json); only model states are counted.");
    if (model.moe() && setup.totalGpus() > 1)
        plan.notes.push_back("Every GPU holds every expert: --ep N splits them (Megatron's layout).");

    const PhaseBands phases
        = composePhases(states, plan.activations.savedBytes, plan.activations.backwardTemporaryBytes, setup);
    plan.forwardBytes = phases.forwardBytes;
    plan.backwardBytes = phases.backwardBytes;
    plan.optimizerStepBytes = phases.optimizerStepBytes;
    plan.byPhase = phases.byPhase;
    plan.peakPhase = phases.peakPhase;
    plan.perGpu = phases.peak();
    plan.totalPerGpu = bandTotal(plan.perGpu);
    addEstimatorFigures(model, setup, plan);
    return plan;
}

namespace {

// The largest value in [1, limit] for which fits(value) holds, given that it is monotonic; 0 if none.
template <typename Fits> int largestFitting(int limit, Fits fits)
{
    if (!fits(1))
        return 0;
    int low = 1; // fits
    int high = 2;
    while (high <= limit && fits(high)) {
        low = high;
        high *= 2;
    }
    high = std::min(high, limit + 1); // does not fit, or past the limit
    while (high - low > 1) {
        const int middle = low + (high - low) / 2;
        if (fits(middle))
            low = middle;
        else
            high = middle;
    }
    return low;
}

} // namespace

PlanTotal formulaTotal(const ModelSpec& model)
{
    return [model](const TrainingSetup& setup) { return planMemory(model, setup).totalPerGpu; };
}

int maxMicroBatch(const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total)
{
    if (!model.hasDimensions())
        return -1;
    TrainingSetup trial = setup;
    return largestFitting(1 << 16, [&](int batch) {
        trial.microBatch = batch;
        return total(trial) <= capacityBytes;
    });
}

int maxSequence(const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total)
{
    if (!model.hasDimensions())
        return -1;
    constexpr int step = 128;
    TrainingSetup trial = setup;
    return step * largestFitting(1 << 13, [&](int steps) {
        trial.sequence = steps * step;
        return total(trial) <= capacityBytes;
    });
}

} // namespace oomlens::planner
