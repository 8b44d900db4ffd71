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

    ModelSpec model = given;
    if (model.vocab > 0) {
        model.vocab = megatronPaddedVocab(given.vocab, p.tensor);
        if (model.vocab != given.vocab)
            plan.notes.push_back("The vocabulary is padded to " + std::to_string(model.vocab)
                + " (a multiple of 128 x TP), as Megatron pads it.");
    }
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

    const int pipeline = model.hasDimensions() ? std::min(p.pipeline, model.layers) : p.pipeline;
    const int microbatches = p.microbatchCap();
    // A virtual stage holds at least one layer: more chunks than a stage has layers do not exist.
    const int layersPerStage = model.hasDimensions() ? std::max(1, (model.layers + pipeline - 1) / pipeline) : 1;
    const int chunks = std::clamp(p.virtualStages, 1, model.hasDimensions() ? layersPerStage : p.virtualStages);
    if (chunks < p.virtualStages)
        plan.notes.push_back("--vpp " + std::to_string(p.virtualStages) + " is more virtual stages than a stage's "
            + std::to_string(layersPerStage) + " layers: counted as " + std::to_string(chunks) + ".");
    int first = 0;
    for (int stage = 0; stage < pipeline; ++stage) {
        StageMemory memory;
        memory.stage = stage;
        memory.firstLayer = first;
        memory.layers = model.hasDimensions() ? stageLayers(model.layers, pipeline, stage) : 0;
        memory.embedding = stage == 0;
        memory.outputLayer = stage == pipeline - 1;
        const StageShard shard = stageShard(model, setup, stage, first, memory.layers);
        memory.parameters = shard.dense + shard.experts;
        std::vector<std::string> stageNotes; // the same for every stage: the first one's are kept
        const ModelStates states = stageStates(model, setup, shard, stageNotes);
        if (stage == 0)
            plan.notes.insert(plan.notes.end(), stageNotes.begin(), stageNotes.end());

        uint64_t saved = 0;
        uint64_t temporaries = 0;
        if (plan.activationsModelled) {
            const uint64_t layersBytes = keptBlockBytes(model, setup, plan.activations, first, memory.layers);
            if (chunks == 1) {
                memory.inFlight = std::min(pipeline - stage, microbatches);
                saved = layersBytes * static_cast<uint64_t>(memory.inFlight);
                memory.inFlightLayers = static_cast<double>(memory.layers) * memory.inFlight;
            } else {
                // Megatron's interleaved warm-up: (PP - k - 1)·2 + (VPP - 1)·PP forwards, and the
                // one in progress, each a chunk of 1/VPP of the stage's layers.
                const int64_t warmUp = 2 * int64_t(pipeline - stage - 1) + int64_t(chunks - 1) * pipeline + 1;
                memory.inFlight = int(std::min(warmUp, int64_t(microbatches) * chunks));
                saved = layersBytes * static_cast<uint64_t>(memory.inFlight) / static_cast<uint64_t>(chunks);
                memory.inFlightLayers = static_cast<double>(memory.layers) * memory.inFlight / chunks;
            }
            if (setup.checkpointedBlocks(memory.layers) > 0)
                saved += plan.activations.perLayerBytes; // the block being recomputed
            temporaries = plan.activations.layerGradientBytes;
            if (memory.outputLayer) {
                saved += plan.activations.logitsSavedBytes;
                temporaries = std::max(temporaries, plan.activations.logitsGradientBytes);
            }
        }
        const PhaseBands phases = composePhases(states, saved, temporaries, setup);
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
            plan.activations.savedBytes = saved;
        }
        first += memory.layers;
    }

    const StageMemory& busiest = plan.stages[static_cast<size_t>(plan.busiestStage)];
    plan.byPhase = busiest.byPhase;
    plan.peakPhase = busiest.peakPhase;
    plan.perGpu = busiest.perGpu;
    plan.totalPerGpu = busiest.totalPerGpu;
    plan.parametersPerGpu = busiest.parameters;
    if (pipeline > 1)
        plan.notes.push_back("Pipeline stage " + std::to_string(busiest.stage) + " of " + std::to_string(pipeline)
            + " holds the most (the bands above are its GPU's); every stage is listed under stages.");
    addEstimatorFigures(given, setup, plan);
    return plan;
}

} // namespace oomlens::planner
