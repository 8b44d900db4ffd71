#include "core/planner/servingplan.h"

#include "core/planner/modelstates.h"
#include "core/planner/parallelplan.h"

#include <algorithm>
#include <cstdio>

namespace oomlens::planner {

KvCacheShape servingKvShape(const ModelSpec& model, const TrainingSetup& setup)
{
    KvCacheShape shape;
    const int pipeline = std::max(setup.parallel.pipeline, 1);
    shape.layers = model.layers > 0 ? stageLayers(model.layers, pipeline, 0) : 0;
    shape.kvHeads = model.kvHeadsOrHeads();
    shape.headDim = model.headDim();
    shape.elementBytes = kvDtypeBytes(setup.kvDtype);
    shape.tensorParallel = setup.parallel.tensor;
    if (model.latentAttention())
        shape.latentDim = model.kvLoraRank + model.qkRopeHeadDim;
    return shape;
}

namespace {

uint64_t ceilDiv(uint64_t value, uint64_t by)
{
    return by > 1 ? (value + by - 1) / by : value;
}

// The forward's peak workspace for one step: one block's widest live tensors for the batched
// tokens, and the sampler's fp32 logits (the last position of every sequence).
uint64_t servingWorkspace(const ModelSpec& model, const TrainingSetup& setup)
{
    if (!model.hasDimensions())
        return 0;
    const uint64_t t = static_cast<uint64_t>(std::max(setup.parallel.tensor, 1));
    const uint64_t e = setup.precision == Precision::Fp32 ? 4 : 2;
    const uint64_t sequences = static_cast<uint64_t>(setup.microBatch);
    const uint64_t tokens = std::min<uint64_t>(sequences * static_cast<uint64_t>(setup.sequence), vllmMaxBatchedTokens);
    const uint64_t h = static_cast<uint64_t>(model.hidden);
    const uint64_t kv = static_cast<uint64_t>(model.kvDim());
    const uint64_t mlpInner = model.gatedMlp ? 3 : 2; // gate and up, then the activation's output
    const uint64_t attention = (h + 2 * kv) / t + h / t;
    uint64_t mlp = mlpInner * ceilDiv(static_cast<uint64_t>(model.ffnOrDefault()), t);
    if (model.moe()) {
        const uint64_t routed = static_cast<uint64_t>(model.topK())
            * (h + mlpInner * ceilDiv(static_cast<uint64_t>(model.expertFfnOrDefault()), t));
        mlp = std::max(mlp, routed);
    }
    const uint64_t residual = 2 * h; // the residual stream and the norm's output
    const uint64_t logits = sequences * ceilDiv(static_cast<uint64_t>(std::max(model.vocab, 0)), t) * 4;
    return tokens * e * (residual + std::max(attention, mlp)) + logits;
}

// Bytes per weight the serving format leaves unquantized (embeddings, norms, the head) and the
// checkpoint holds.
double unquantizedBytes(const TrainingSetup& setup)
{
    return setup.precision == Precision::Fp32 ? 4.0 : 2.0;
}

// The busiest stage's weights: the first (with the embedding) or the last (with the head). The
// blocks' linear layers take the serving format's bytes, the rest stays in 16 (or 32) bits.
void busiestStageWeights(const ModelSpec& model, const TrainingSetup& split, MemoryPlan& plan)
{
    const double quantized = servingBytesPerWeight(split);
    const double unquantized = unquantizedBytes(split);
    uint64_t weights = 0;
    int first = 0;
    for (int stage = 0; stage < split.parallel.pipeline; ++stage) {
        const int layers = model.hasDimensions() ? stageLayers(model.layers, split.parallel.pipeline, stage) : 0;
        const StageShard shard = stageShard(model, split, stage, first, layers);
        const uint64_t total = shard.dense + shard.experts;
        const uint64_t linear = model.hasDimensions() ? std::min(shard.blockLinear, total) : total;
        const uint64_t bytes = scaled(linear, quantized) + scaled(total - linear, unquantized);
        if (bytes > weights) {
            weights = bytes;
            plan.parametersPerGpu = total;
            plan.busiestStage = stage;
        }
        first += layers;
    }
    plan.servingMemory.weightBytes = weights;
}

// Serving has one phase: the weights, the workspace, the KV cache and the CUDA context at once.
void servingBands(MemoryPlan& plan)
{
    const ServingMemory& serving = plan.servingMemory;
    BandBytes bands {};
    bands[static_cast<size_t>(Band::Parameters)] = serving.weightBytes;
    bands[static_cast<size_t>(Band::Activations)] = serving.activationBytes;
    bands[static_cast<size_t>(Band::KvCache)] = serving.kvCacheBytes;
    bands[static_cast<size_t>(Band::Overhead)] = cudaContextBytes;
    plan.byPhase = { bands, bands, bands };
    plan.peakPhase = PeakPhase::Forward;
    plan.perGpu = bands;
    plan.totalPerGpu = bandTotal(bands);
    plan.forwardBytes = plan.totalPerGpu - cudaContextBytes;
    plan.backwardBytes = 0;
    plan.optimizerStepBytes = 0;
}

void servingNotes(const ModelSpec& model, const TrainingSetup& setup, std::vector<std::string>& notes)
{
    if (!model.hasDimensions())
        notes.push_back("The KV cache and the workspace need the layers, hidden size and heads (a config.json).");
    if (model.latentAttention())
        notes.push_back("Multi-head latent attention caches kv_lora_rank + qk_rope_head_dim per token and "
                        "layer, the same on every tensor-parallel rank.");
    if (setup.parallel.tensor > model.kvHeadsOrHeads() && !model.latentAttention())
        notes.push_back("TP exceeds the KV heads: each rank keeps a whole head (vLLM replicates them).");
}

} // namespace

MemoryPlan planServing(const ModelSpec& model, const TrainingSetup& setup)
{
    MemoryPlan plan;
    plan.serving = true;
    plan.parameterCount = model.totalParameters();
    plan.trainableParameters = 0;
    plan.largestLayerParameters = model.largestLayerParameters();
    plan.activationsModelled = model.hasDimensions();
    const int pipeline
        = model.hasDimensions() ? std::min(setup.parallel.pipeline, model.layers) : setup.parallel.pipeline;
    TrainingSetup split = setup;
    split.parallel.pipeline = std::max(pipeline, 1);
    busiestStageWeights(model, split, plan);

    ServingMemory& serving = plan.servingMemory;
    serving.kvBytesPerToken = kvBytesPerToken(servingKvShape(model, split));
    serving.kvCacheBytes
        = serving.kvBytesPerToken * static_cast<uint64_t>(setup.microBatch) * static_cast<uint64_t>(setup.sequence);
    serving.activationBytes = servingWorkspace(model, setup);
    serving.fixedBytes = serving.weightBytes + serving.activationBytes + cudaContextBytes;
    servingBands(plan);
    plan.hostBytes = scaled(plan.parameterCount, unquantizedBytes(setup)); // the checkpoint as loaded
    plan.dataParallel = setup.parallel.dataParallel(setup.totalGpus());
    servingNotes(model, setup, plan.notes);
    return plan;
}

ServingFit fitServing(const MemoryPlan& plan, const TrainingSetup& setup, uint64_t capacityBytes)
{
    ServingFit fit;
    const ServingMemory& serving = plan.servingMemory;
    fit.gpuMemoryUtilization = setup.gpuMemoryUtilization;
    fit.budgetBytes = static_cast<uint64_t>(static_cast<double>(capacityBytes) * setup.gpuMemoryUtilization);
    fit.kvBudgetBytes = fit.budgetBytes > serving.fixedBytes ? fit.budgetBytes - serving.fixedBytes : 0;
    if (serving.kvBytesPerToken > 0) {
        fit.kvTokens = fit.kvBudgetBytes / serving.kvBytesPerToken;
        fit.maxSequences = fit.kvTokens / static_cast<uint64_t>(std::max(setup.sequence, 1));
        fit.maxContext = fit.kvTokens / static_cast<uint64_t>(std::max(setup.microBatch, 1));
    }
    fit.neededUtilization
        = capacityBytes > 0 ? static_cast<double>(plan.totalPerGpu) / static_cast<double>(capacityBytes) : 0;
    fit.fits = plan.totalPerGpu <= fit.budgetBytes;
    return fit;
}

std::string vllmCommand(const ModelSpec& model, const TrainingSetup& setup)
{
    char share[16];
    std::snprintf(share, sizeof share, "%.2f", setup.gpuMemoryUtilization);
    std::string command = "vllm serve " + (model.name.empty() ? std::string("MODEL") : model.name)
        + " --tensor-parallel-size " + std::to_string(setup.parallel.tensor);
    if (setup.parallel.pipeline > 1)
        command += " --pipeline-parallel-size " + std::to_string(setup.parallel.pipeline);
    if (setup.parallel.expert > 1)
        command += " --enable-expert-parallel";
    command += " --gpu-memory-utilization " + std::string(share);
    if (setup.kvDtype == KvDtype::Fp8)
        command += " --kv-cache-dtype fp8";
    // fp8 quantizes on load; int8/int4 need a checkpoint quantized that way (GPTQ, AWQ, W8A8).
    if (setup.weights == WeightFormat::Fp8)
        command += " --quantization fp8";
    command
        += " --max-model-len " + std::to_string(setup.sequence) + " --max-num-seqs " + std::to_string(setup.microBatch);
    if (setup.weights == WeightFormat::Int8 || setup.weights == WeightFormat::Int4)
        command += "  # a checkpoint quantized to " + std::string(weightFormatName(setup.weights))
            + " (GPTQ, AWQ or W8A8): vLLM reads its quantization from the checkpoint";
    return command + "\n";
}

} // namespace oomlens::planner
