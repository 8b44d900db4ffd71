#include "core/planner/parallelplan.h"

#include "core/planner/estimatorfigures.h"
#include "core/planner/modelstates.h"

#include <algorithm>

namespace oomlens::planner {

int megatronPaddedVocab(int vocab, int tensorParallel)
{
    const int multiple = 128 * std::max(tensorParallel, 1);
    return vocab > 0 ? (vocab + multiple - 1) / multiple * multiple : vocab;
}

int stageLayers(int layers, int pipeline, int stage)
{
    const int stages = std::max(pipeline, 1);
    return layers / stages + (stage < layers % stages ? 1 : 0);
}

namespace {

uint64_t ceilDiv(uint64_t value, uint64_t by)
{
    return by > 1 ? (value + by - 1) / by : value;
}

} // namespace

StageShard stageShard(const ModelSpec& model, const TrainingSetup& setup, int stage, int first, int count)
{
    const Parallelism& p = setup.parallel;
    const uint64_t tp = static_cast<uint64_t>(p.tensor);
    StageShard shard;
    if (!model.hasDimensions() || model.vocab <= 0) {
        // A bare parameter count: an even share of everything.
        shard.dense = ceilDiv(model.totalParameters(), tp * static_cast<uint64_t>(p.pipeline));
        return shard;
    }
    const int stages = p.pipeline;
    uint64_t dense = 0;
    uint64_t experts = 0;
    uint64_t denseLinear = 0;
    for (int layer = first; layer < first + count; ++layer) {
        const uint64_t routed = model.moeLayer(layer) ? model.routedExpertParameters() : 0;
        dense += model.layerParameters(layer) - routed;
        denseLinear += model.layerParameters(layer) - routed - model.blockExtraParameters();
        experts += routed;
    }
    const uint64_t word = static_cast<uint64_t>(model.vocab) * static_cast<uint64_t>(model.hidden);
    if (stage == 0)
        dense += model.embeddingParameters();
    if (stage == stages - 1) {
        // The LM head: its own matrix when untied; when tied and the pipeline has more than one
        // stage, Megatron keeps a copy of the word embedding here and syncs its gradient.
        dense += model.tiedEmbeddings ? (stages > 1 ? word : 0) : word;
        dense += static_cast<uint64_t>(model.hidden) * (model.layerNormBiases ? 2 : 1); // the final norm
    }
    shard.dense = ceilDiv(dense, tp);
    shard.experts = ceilDiv(experts, tp * static_cast<uint64_t>(p.expert));
    shard.blockLinear = ceilDiv(denseLinear, tp) + shard.experts;
    return shard;
}

namespace {

ModelStates stageStates(
    const ModelSpec& model, const TrainingSetup& setup, const StageShard& shard, std::vector<std::string>& notes)
{
    const int gpus = setup.totalGpus();
    const uint64_t denseGroup = static_cast<uint64_t>(setup.parallel.denseShardGroup(gpus));
    const uint64_t expertGroup = static_cast<uint64_t>(setup.parallel.expertShardGroup(gpus));
    const uint64_t largest = ceilDiv(model.largestLayerParameters(), static_cast<uint64_t>(setup.parallel.tensor));
    ModelStates states;
    if (setup.zeroStage > 0) {
        states = dataParallelStates(model, setup, shard.dense, denseGroup, largest, notes);
        if (shard.experts > 0) {
            std::vector<std::string> ignored; // the same notes again
            states += dataParallelStates(model, setup, shard.experts, expertGroup, 0, ignored);
        }
        return states;
    }
    states = megatronStates(model, setup, shard.dense, denseGroup);
    if (shard.experts > 0)
        states += megatronStates(model, setup, shard.experts, expertGroup);
    return states;
}

// The model as Megatron lays it out: the vocabulary padded to a multiple of 128 x TP.
ModelSpec paddedModel(const ModelSpec& given, const Parallelism& p, std::vector<std::string>& notes)
{
    ModelSpec model = given;
    if (model.vocab > 0) {
        model.vocab = megatronPaddedVocab(given.vocab, p.tensor);
        if (model.vocab != given.vocab)
            notes.push_back("The vocabulary is padded to " + std::to_string(model.vocab)
                + " (a multiple of 128 x TP), as Megatron pads it.");
    }
    return model;
}

// The activations per block where the model has its dimensions, and what the split over the
// GPUs rounds: the busiest rank's share is the one counted.
void modelActivations(const ModelSpec& model, const TrainingSetup& setup, MemoryPlan& plan)
{
    const Parallelism& p = setup.parallel;
    plan.activationsModelled = model.hasDimensions();
    if (plan.activationsModelled)
        plan.activations = estimateActivations(model, setup);
    else
        plan.notes.push_back("Activations need the layers, hidden size and heads; only model states are counted.");
    if (model.hasDimensions() && (model.heads % p.tensor != 0 || model.layers % p.pipeline != 0))
        plan.notes.push_back("Megatron needs the heads divisible by TP and the layers by PP: the busiest share is "
                             "counted (rounded up).");
    if (model.moe() && p.expert > 1 && model.experts % p.expert != 0)
        plan.notes.push_back("The experts do not divide by EP: the busiest rank's share is counted (rounded up).");
    if (model.moe() && model.capacityFactor <= 0)
        plan.notes.push_back("Dropless routing: expert activations are counted for an even share of tokens (top-k "
                             "per token); a skewed router puts more on the busiest expert rank.");
}

// The pipeline as it can exist for this model: stages, microbatches and virtual stages (chunks).
struct PipelineShape
{
    int pipeline = 1;
    int microbatches = 1;
    int chunks = 1;
};

PipelineShape pipelineShape(const ModelSpec& model, const Parallelism& p, std::vector<std::string>& notes)
{
    PipelineShape shape;
    shape.pipeline = model.hasDimensions() ? std::min(p.pipeline, model.layers) : p.pipeline;
    shape.microbatches = p.microbatchCap();
    // A virtual stage holds at least one layer: more chunks than a stage has layers do not exist.
    const int layersPerStage
        = model.hasDimensions() ? std::max(1, (model.layers + shape.pipeline - 1) / shape.pipeline) : 1;
    shape.chunks = std::clamp(p.virtualStages, 1, model.hasDimensions() ? layersPerStage : p.virtualStages);
    if (shape.chunks < p.virtualStages)
        notes.push_back("--vpp " + std::to_string(p.virtualStages) + " is more virtual stages than a stage's "
            + std::to_string(layersPerStage) + " layers: counted as " + std::to_string(shape.chunks) + ".");
    return shape;
}

// Activations a stage holds at its peak: what its microbatches in flight saved, and the
// largest temporary of backward.
struct StageActivations
{
    uint64_t saved = 0;
    uint64_t temporaries = 0;
};

// Sets the stage's microbatches in flight and returns what they and backward hold.
StageActivations stageActivations(const ModelSpec& model, const TrainingSetup& setup,
    const ActivationEstimate& activations, const PipelineShape& shape, StageMemory& memory)
{
    StageActivations held;
    const int stage = memory.stage;
    const uint64_t layersBytes = keptBlockBytes(model, setup, activations, memory.firstLayer, memory.layers);
    if (shape.chunks == 1) {
        memory.inFlight = std::min(shape.pipeline - stage, shape.microbatches);
        held.saved = layersBytes * static_cast<uint64_t>(memory.inFlight);
        memory.inFlightLayers = static_cast<double>(memory.layers) * memory.inFlight;
    } else {
        // Megatron's interleaved warm-up: (PP - k - 1)·2 + (VPP - 1)·PP forwards, and the
        // one in progress, each a chunk of 1/VPP of the stage's layers.
        const int64_t warmUp = 2 * int64_t(shape.pipeline - stage - 1) + int64_t(shape.chunks - 1) * shape.pipeline + 1;
        memory.inFlight = int(std::min(warmUp, int64_t(shape.microbatches) * shape.chunks));
        held.saved = layersBytes * static_cast<uint64_t>(memory.inFlight) / static_cast<uint64_t>(shape.chunks);
        memory.inFlightLayers = static_cast<double>(memory.layers) * memory.inFlight / shape.chunks;
    }
    if (setup.checkpointedBlocks(memory.layers) > 0)
        held.saved += activations.perLayerBytes; // the block being recomputed
    held.temporaries = activations.layerGradientBytes;
    if (memory.outputLayer) {
        held.saved += activations.logitsSavedBytes;
        held.temporaries = std::max(held.temporaries, activations.logitsGradientBytes);
    }
    return held;
}

// One pipeline stage's layers, parameters and bands; the plan keeps the busiest stage's phases.
void planStage(const ModelSpec& model, const TrainingSetup& setup, const PipelineShape& shape, int stage, int first,
    MemoryPlan& plan)
{
    StageMemory memory;
    memory.stage = stage;
    memory.firstLayer = first;
    memory.layers = model.hasDimensions() ? stageLayers(model.layers, shape.pipeline, stage) : 0;
    memory.embedding = stage == 0;
    memory.outputLayer = stage == shape.pipeline - 1;
    const StageShard shard = stageShard(model, setup, stage, first, memory.layers);
    memory.parameters = shard.dense + shard.experts;
    std::vector<std::string> stageNotes; // the same for every stage: the first one's are kept
    const ModelStates states = stageStates(model, setup, shard, stageNotes);
    if (stage == 0)
        plan.notes.insert(plan.notes.end(), stageNotes.begin(), stageNotes.end());

    const StageActivations held = plan.activationsModelled
        ? stageActivations(model, setup, plan.activations, shape, memory)
        : StageActivations {};
    const PhaseBands phases = composePhases(states, held.saved, held.temporaries, setup);
    memory.byPhase = phases.byPhase;
    memory.peakPhase = phases.peakPhase;
    memory.perGpu = phases.peak();
    memory.totalPerGpu = bandTotal(memory.perGpu);
    plan.hostBytes = std::max(plan.hostBytes, states.hostBytes);
    if (plan.stages.empty() || memory.totalPerGpu > plan.stages[static_cast<size_t>(plan.busiestStage)].totalPerGpu)
        plan.busiestStage = stage;
    plan.stages.push_back(memory);
    if (stage == plan.busiestStage) {
        plan.forwardBytes = phases.forwardBytes;
        plan.backwardBytes = phases.backwardBytes;
        plan.optimizerStepBytes = phases.optimizerStepBytes;
        plan.activations.savedBytes = held.saved;
    }
}

// The plan's figures per GPU are the busiest stage's: the GPU that runs out first.
void adoptBusiestStage(MemoryPlan& plan, int pipeline)
{
    const StageMemory& busiest = plan.stages[static_cast<size_t>(plan.busiestStage)];
    plan.byPhase = busiest.byPhase;
    plan.peakPhase = busiest.peakPhase;
    plan.perGpu = busiest.perGpu;
    plan.totalPerGpu = busiest.totalPerGpu;
    plan.parametersPerGpu = busiest.parameters;
    if (pipeline > 1)
        plan.notes.push_back("Pipeline stage " + std::to_string(busiest.stage) + " of " + std::to_string(pipeline)
            + " holds the most (the bands above are its GPU's); every stage is listed under stages.");
}

} // namespace

MemoryPlan planParallel(const ModelSpec& given, const TrainingSetup& setup)
{
    const Parallelism& p = setup.parallel;
    MemoryPlan plan;
    plan.parameterCount = given.totalParameters();
    plan.trainableParameters = plan.parameterCount;
    plan.largestLayerParameters = given.largestLayerParameters();
    const int gpus = setup.totalGpus();
    plan.dataParallel = p.dataParallel(gpus);
    plan.expertDataParallel = p.expertShardGroup(gpus);

    const ModelSpec model = paddedModel(given, p, plan.notes);
    modelActivations(model, setup, plan);
    const PipelineShape shape = pipelineShape(model, p, plan.notes);
    int first = 0;
    for (int stage = 0; stage < shape.pipeline; ++stage) {
        planStage(model, setup, shape, stage, first, plan);
        first += plan.stages.back().layers;
    }
    adoptBusiestStage(plan, shape.pipeline);
    addEstimatorFigures(given, setup, plan);
    return plan;
}

} // namespace oomlens::planner
