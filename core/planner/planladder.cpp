#include "core/planner/planladder.h"

#include <functional>
#include <initializer_list>
#include <optional>

namespace oomlens::planner {

namespace {

struct RungChange
{
    std::string change;
    TrainingSetup setup;
};

using Rung = std::function<std::optional<RungChange>(const TrainingSetup&)>;

struct RungDefinition
{
    const char* id;
    Rung apply;
    bool changesExperiment;
};

// What the rungs that search for the cheapest change that fits read: the model, the card's
// capacity and the planner's total for a set-up. A rung holds its own copy, so a ladder never
// depends on the caller's objects staying alive.
struct FitTarget
{
    ModelSpec model;
    uint64_t capacityBytes = 0;
    PlanTotal total;

    bool fits(const TrainingSetup& setup) const { return total(setup) <= capacityBytes; }
};

// The smallest of `degrees` that fits, else the largest that is valid; nullopt when none is
// valid. `with` applies a degree to the set-up.
template <typename With, typename Valid>
std::optional<TrainingSetup> smallestFitting(
    const TrainingSetup& s, std::initializer_list<int> degrees, With with, Valid valid, const FitTarget& target)
{
    std::optional<TrainingSetup> largest;
    for (int degree : degrees) {
        TrainingSetup next = s;
        with(next, degree);
        if (!valid(degree) || !setupProblem(next).empty())
            continue;
        if (target.fits(next))
            return next;
        largest = next;
    }
    return largest;
}

std::string parallelChange(const char* name, int from, int to)
{
    return std::string(name) + " " + std::to_string(from) + " -> " + std::to_string(to);
}

std::optional<RungChange> tensorParallel(const FitTarget& target, const TrainingSetup& s)
{
    if (s.loraRank > 0 || s.gpusPerNode < 2 || s.parallel.tensor >= s.gpusPerNode)
        return std::nullopt;
    const auto next = smallestFitting(
        s, { 2, 4, 8 },
        [](TrainingSetup& t, int degree) {
            t.parallel.tensor = degree;
            t.parallel.sequenceParallel = !t.inference;
        },
        [&](int degree) {
            return degree > s.parallel.tensor && degree <= s.gpusPerNode
                && (!target.model.hasDimensions() || target.model.heads % degree == 0);
        },
        target);
    if (!next)
        return std::nullopt;
    return RungChange { parallelChange("tensor parallel", s.parallel.tensor, next->parallel.tensor)
            + (next->parallel.sequenceParallel ? " with sequence parallelism" : ""),
        *next };
}

std::optional<RungChange> pipelineParallel(const FitTarget& target, const TrainingSetup& s)
{
    if (s.loraRank > 0 || s.totalGpus() < 2)
        return std::nullopt;
    const auto next = smallestFitting(
        s, { 2, 4, 8, 16 }, [](TrainingSetup& t, int degree) { t.parallel.pipeline = degree; },
        [&](int degree) {
            return degree > s.parallel.pipeline && (!target.model.hasDimensions() || degree <= target.model.layers);
        },
        target);
    if (!next)
        return std::nullopt;
    return RungChange { parallelChange("pipeline parallel", s.parallel.pipeline, next->parallel.pipeline), *next };
}

std::optional<RungChange> expertParallel(const FitTarget& target, const TrainingSetup& s)
{
    if (!target.model.moe() || s.loraRank > 0)
        return std::nullopt;
    const auto next = smallestFitting(
        s, { 2, 4, 8, 16, 32, 64 }, [](TrainingSetup& t, int degree) { t.parallel.expert = degree; },
        [&](int degree) { return degree > s.parallel.expert && target.model.experts % degree == 0; }, target);
    if (!next)
        return std::nullopt;
    return RungChange { parallelChange("expert parallel", s.parallel.expert, next->parallel.expert), *next };
}

// Model parallelism where sharding over data parallel is not enough: TP within a node (with
// sequence parallelism, which costs nothing more), then PP across nodes, then EP for experts.
std::vector<RungDefinition> parallelRungs(const FitTarget& target)
{
    return {
        { "tensor_parallel", std::bind_front(tensorParallel, target), false },
        { "pipeline_parallel", std::bind_front(pipelineParallel, target), false },
        { "expert_parallel", std::bind_front(expertParallel, target), false },
    };
}

std::optional<RungChange> fp8KvCache(const TrainingSetup& s)
{
    if (kvDtypeBytes(s.kvDtype) <= 1)
        return std::nullopt;
    TrainingSetup next = s;
    next.kvDtype = KvDtype::Fp8;
    return RungChange { "KV cache " + std::string(kvDtypeName(s.kvDtype)) + " -> fp8", next };
}

std::optional<RungChange> quantizeWeights(const FitTarget& target, const TrainingSetup& s)
{
    if (s.weights == WeightFormat::Int4)
        return std::nullopt;
    TrainingSetup next = s;
    next.weights
        = s.weights == WeightFormat::Int8 || s.weights == WeightFormat::Fp8 ? WeightFormat::Int4 : WeightFormat::Fp8;
    if (next.weights == WeightFormat::Fp8 && !target.fits(next))
        next.weights = WeightFormat::Int4;
    return RungChange { "weights " + std::string(weightFormatName(s.weights)) + " -> "
            + std::string(weightFormatName(next.weights)),
        next };
}

// Serving's rungs: an fp8 KV cache (half the bytes per token), then quantized weights.
std::vector<RungDefinition> servingRungs(const FitTarget& target)
{
    return {
        { "kv_cache_fp8", fp8KvCache, false },
        { "quantize_weights", std::bind_front(quantizeWeights, target), true },
    };
}

std::optional<RungChange> halveMicroBatch(const TrainingSetup& s)
{
    if (s.microBatch < 2)
        return std::nullopt;
    TrainingSetup next = s;
    next.microBatch = s.microBatch / 2;
    next.gradientAccumulation = s.gradientAccumulation * 2;
    return RungChange { "micro-batch " + std::to_string(s.microBatch) + " -> " + std::to_string(next.microBatch)
            + ", accumulate " + std::to_string(next.gradientAccumulation),
        next };
}

std::optional<RungChange> autocastBf16(const TrainingSetup& s)
{
    if (s.precision != Precision::Fp32)
        return std::nullopt;
    TrainingSetup next = s;
    next.precision = Precision::MixedBf16;
    return RungChange { "fp32 -> mixed-bf16 autocast", next };
}

std::optional<RungChange> checkpointBlocks(const FitTarget& target, const TrainingSetup& s)
{
    if (s.checkpointing == Checkpointing::Full)
        return std::nullopt;
    // Checkpointing every K-th block recomputes 1/K of what full checkpointing does:
    // the largest K that fits is the cheaper rung; full when none does.
    const int layers = target.model.layers;
    TrainingSetup next = s;
    const int widest = s.checkpointing == Checkpointing::EveryK ? s.checkpointEvery - 1 : layers;
    next.checkpointing = Checkpointing::EveryK;
    for (int k = widest; k >= 2; --k) {
        next.checkpointEvery = k;
        if (next.checkpointedBlocks(layers) == s.checkpointedBlocks(layers))
            continue; // the same blocks as before: nothing gained
        if (target.fits(next))
            return RungChange { "activation checkpointing on one block in every " + std::to_string(k), next };
    }
    next.checkpointing = Checkpointing::Full;
    next.checkpointEvery = 0;
    return RungChange { "activation checkpointing per block", next };
}

std::optional<RungChange> switchToSdpa(const TrainingSetup& s)
{
    if (s.attention == Attention::Sdpa)
        return std::nullopt;
    TrainingSetup next = s;
    next.attention = Attention::Sdpa;
    return RungChange { "eager -> SDPA / FlashAttention", next };
}

std::optional<RungChange> optimizer8bit(const TrainingSetup& s)
{
    if (s.optimizer != OptimizerKind::AdamW && s.optimizer != OptimizerKind::AdamWFused)
        return std::nullopt;
    TrainingSetup next = s;
    next.optimizer = OptimizerKind::AdamW8bit;
    return RungChange { "AdamW -> 8-bit AdamW", next };
}

std::optional<RungChange> shardWithZero(const FitTarget& target, const TrainingSetup& s)
{
    if (s.totalGpus() < 2 || s.zeroStage >= 3 || s.loraRank > 0 || s.parallel.distributedOptimizer)
        return std::nullopt;
    // The lowest stage that fits, else ZeRO-3.
    TrainingSetup next = s;
    for (int stage = std::max(s.zeroStage + 1, 1); stage <= 3; ++stage) {
        next.zeroStage = stage;
        if (target.fits(next))
            break;
    }
    return RungChange { "ZeRO-" + std::to_string(next.zeroStage) + " over " + std::to_string(s.totalGpus()) + " GPUs",
        next };
}

std::optional<RungChange> offloadToCpu(const FitTarget& target, const TrainingSetup& s)
{
    if (s.offload == Offload::All || s.loraRank > 0 || s.parallel.distributedOptimizer)
        return std::nullopt;
    TrainingSetup next = s;
    next.zeroStage = std::max(s.zeroStage, 2);
    next.offload = Offload::Optimizer;
    if (!target.fits(next)) {
        next.zeroStage = 3;
        next.offload = Offload::All;
    }
    if (next.offload == s.offload && next.zeroStage == s.zeroStage)
        return std::nullopt;
    return RungChange { "ZeRO-" + std::to_string(next.zeroStage) + " with "
            + (next.offload == Offload::All ? "optimizer and parameters" : "the optimizer") + " on the CPU",
        next };
}

std::optional<RungChange> loraAdapters(const FitTarget& target, const TrainingSetup& s)
{
    if (s.quantizedBase || !target.model.hasDimensions())
        return std::nullopt;
    TrainingSetup next = s;
    next.loraRank = s.loraRank > 0 ? s.loraRank : 16;
    next.zeroStage = 0;
    next.offload = Offload::None;
    if (s.precision == Precision::Fp32)
        next.precision = Precision::MixedBf16;
    std::string change = "LoRA rank " + std::to_string(next.loraRank) + " on a 16-bit base";
    if (s.loraRank > 0 || !target.fits(next)) {
        next.quantizedBase = true;
        change = "QLoRA: rank " + std::to_string(next.loraRank) + " on a 4-bit base";
    }
    return RungChange { change, next };
}

// Training's rungs, cheapest first.
std::vector<RungDefinition> trainingRungs(const FitTarget& target)
{
    return {
        { "micro_batch", halveMicroBatch, false },
        { "bf16", autocastBf16, false },
        { "checkpointing", std::bind_front(checkpointBlocks, target), false },
        { "sdpa", switchToSdpa, false },
        { "optimizer_8bit", optimizer8bit, false },
        { "zero", std::bind_front(shardWithZero, target), false },
        { "offload", std::bind_front(offloadToCpu, target), false },
        { "lora", std::bind_front(loraAdapters, target), true },
    };
}

std::vector<RungDefinition> rungs(
    const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total)
{
    const FitTarget target { model, capacityBytes, total };
    std::vector<RungDefinition> ladder;
    const std::vector<RungDefinition> parallel = parallelRungs(target);
    if (setup.inference) {
        ladder = servingRungs(target);
        ladder.push_back(parallel.front()); // tensor parallelism
        return ladder;
    }
    ladder = trainingRungs(target);
    // Model parallelism after ZeRO and offload, before LoRA changes the experiment.
    ladder.insert(ladder.end() - 1, parallel.begin(), parallel.end());
    return ladder;
}

} // namespace

std::vector<LadderRung> climbLadder(
    const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total)
{
    std::vector<LadderRung> climbed;
    if (total(setup) <= capacityBytes)
        return climbed;
    TrainingSetup current = setup;
    for (const RungDefinition& rung : rungs(model, setup, capacityBytes, total)) {
        const auto alone = rung.apply(setup);
        const auto onTop = rung.apply(current);
        if (!alone || !onTop)
            continue;
        LadderRung step;
        step.id = rung.id;
        step.change = onTop->change;
        step.alone = alone->setup;
        step.aloneTotal = total(alone->setup);
        step.climbed = onTop->setup;
        step.climbedTotal = total(onTop->setup);
        step.changesExperiment = rung.changesExperiment;
        climbed.push_back(step);
        current = onTop->setup;
        if (step.climbedTotal <= capacityBytes)
            break;
    }
    return climbed;
}

} // namespace oomlens::planner
