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

// The smallest of `degrees` that fits, else the largest that is valid; nullopt when none is
// valid. `with` applies a degree to the set-up.
template <typename With, typename Valid>
std::optional<TrainingSetup> smallestFitting(const TrainingSetup& s, std::initializer_list<int> degrees, With with,
    Valid valid, uint64_t capacityBytes, const PlanTotal& total)
{
    std::optional<TrainingSetup> largest;
    for (int degree : degrees) {
        TrainingSetup next = s;
        with(next, degree);
        if (!valid(degree) || !setupProblem(next).empty())
            continue;
        if (total(next) <= capacityBytes)
            return next;
        largest = next;
    }
    return largest;
}

std::string parallelChange(const char* name, int from, int to)
{
    return std::string(name) + " " + std::to_string(from) + " -> " + std::to_string(to);
}

// Model parallelism where sharding over data parallel is not enough: TP within a node (with
// sequence parallelism, which costs nothing more), then PP across nodes, then EP for experts.
std::vector<RungDefinition> parallelRungs(const ModelSpec& model, uint64_t capacityBytes, const PlanTotal& total)
{
    return {
        { "tensor_parallel",
            [model, capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
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
                            && (!model.hasDimensions() || model.heads % degree == 0);
                    },
                    capacityBytes, total);
                if (!next)
                    return std::nullopt;
                return RungChange { parallelChange("tensor parallel", s.parallel.tensor, next->parallel.tensor)
                        + (next->parallel.sequenceParallel ? " with sequence parallelism" : ""),
                    *next };
            },
            false },
        { "pipeline_parallel",
            [model, capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.loraRank > 0 || s.totalGpus() < 2)
                    return std::nullopt;
                const auto next = smallestFitting(
                    s, { 2, 4, 8, 16 }, [](TrainingSetup& t, int degree) { t.parallel.pipeline = degree; },
                    [&](int degree) {
                        return degree > s.parallel.pipeline && (!model.hasDimensions() || degree <= model.layers);
                    },
                    capacityBytes, total);
                if (!next)
                    return std::nullopt;
                return RungChange { parallelChange("pipeline parallel", s.parallel.pipeline, next->parallel.pipeline),
                    *next };
            },
            false },
        { "expert_parallel",
            [model, capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (!model.moe() || s.loraRank > 0)
                    return std::nullopt;
                const auto next = smallestFitting(
                    s, { 2, 4, 8, 16, 32, 64 }, [](TrainingSetup& t, int degree) { t.parallel.expert = degree; },
                    [&](int degree) { return degree > s.parallel.expert && model.experts % degree == 0; },
                    capacityBytes, total);
                if (!next)
                    return std::nullopt;
                return RungChange { parallelChange("expert parallel", s.parallel.expert, next->parallel.expert),
                    *next };
            },
            false },
    };
}

// Serving's rungs: an fp8 KV cache (half the bytes per token), then quantized weights.
std::vector<RungDefinition> servingRungs(uint64_t capacityBytes, const PlanTotal& total)
{
    return {
        { "kv_cache_fp8",
            [](const TrainingSetup& s) -> std::optional<RungChange> {
                if (kvDtypeBytes(s.kvDtype) <= 1)
                    return std::nullopt;
                TrainingSetup next = s;
                next.kvDtype = KvDtype::Fp8;
                return RungChange { "KV cache " + std::string(kvDtypeName(s.kvDtype)) + " -> fp8", next };
            },
            false },
        { "quantize_weights",
            [capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.weights == WeightFormat::Int4)
                    return std::nullopt;
                TrainingSetup next = s;
                next.weights = s.weights == WeightFormat::Int8 || s.weights == WeightFormat::Fp8 ? WeightFormat::Int4
                                                                                                 : WeightFormat::Fp8;
                if (next.weights == WeightFormat::Fp8 && total(next) > capacityBytes)
                    next.weights = WeightFormat::Int4;
                return RungChange { "weights " + std::string(weightFormatName(s.weights)) + " -> "
                        + std::string(weightFormatName(next.weights)),
                    next };
            },
            true },
    };
}

std::vector<RungDefinition> trainingRungs(const ModelSpec& model, uint64_t capacityBytes, const PlanTotal& total)
{
    return {
        { "micro_batch",
            [](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.microBatch < 2)
                    return std::nullopt;
                TrainingSetup next = s;
                next.microBatch = s.microBatch / 2;
                next.gradientAccumulation = s.gradientAccumulation * 2;
                return RungChange { "micro-batch " + std::to_string(s.microBatch) + " -> "
                        + std::to_string(next.microBatch) + ", accumulate " + std::to_string(next.gradientAccumulation),
                    next };
            },
            false },
        { "bf16",
            [](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.precision != Precision::Fp32)
                    return std::nullopt;
                TrainingSetup next = s;
                next.precision = Precision::MixedBf16;
                return RungChange { "fp32 -> mixed-bf16 autocast", next };
            },
            false },
        { "checkpointing",
            [model, capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.checkpointing == Checkpointing::Full)
                    return std::nullopt;
                // Checkpointing every K-th block recomputes 1/K of what full checkpointing does:
                // the largest K that fits is the cheaper rung; full when none does.
                TrainingSetup next = s;
                const int widest = s.checkpointing == Checkpointing::EveryK ? s.checkpointEvery - 1 : model.layers;
                next.checkpointing = Checkpointing::EveryK;
                for (int k = widest; k >= 2; --k) {
                    next.checkpointEvery = k;
                    if (next.checkpointedBlocks(model.layers) == s.checkpointedBlocks(model.layers))
                        continue; // the same blocks as before: nothing gained
                    if (total(next) <= capacityBytes) {
                        return RungChange { "activation checkpointing on one block in every " + std::to_string(k),
                            next };
                    }
                }
                next.checkpointing = Checkpointing::Full;
                next.checkpointEvery = 0;
                return RungChange { "activation checkpointing per block", next };
            },
            false },
        { "sdpa",
            [](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.attention == Attention::Sdpa)
                    return std::nullopt;
                TrainingSetup next = s;
                next.attention = Attention::Sdpa;
                return RungChange { "eager -> SDPA / FlashAttention", next };
            },
            false },
        { "optimizer_8bit",
            [](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.optimizer != OptimizerKind::AdamW && s.optimizer != OptimizerKind::AdamWFused)
                    return std::nullopt;
                TrainingSetup next = s;
                next.optimizer = OptimizerKind::AdamW8bit;
                return RungChange { "AdamW -> 8-bit AdamW", next };
            },
            false },
        { "zero",
            [capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.totalGpus() < 2 || s.zeroStage >= 3 || s.loraRank > 0 || s.parallel.distributedOptimizer)
                    return std::nullopt;
                // The lowest stage that fits, else ZeRO-3.
                TrainingSetup next = s;
                for (int stage = std::max(s.zeroStage + 1, 1); stage <= 3; ++stage) {
                    next.zeroStage = stage;
                    if (total(next) <= capacityBytes)
                        break;
                }
                return RungChange {
                    "ZeRO-" + std::to_string(next.zeroStage) + " over " + std::to_string(s.totalGpus()) + " GPUs", next
                };
            },
            false },
        { "offload",
            [capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.offload == Offload::All || s.loraRank > 0 || s.parallel.distributedOptimizer)
                    return std::nullopt;
                TrainingSetup next = s;
                next.zeroStage = std::max(s.zeroStage, 2);
                next.offload = Offload::Optimizer;
                if (total(next) > capacityBytes) {
                    next.zeroStage = 3;
                    next.offload = Offload::All;
                }
                if (next.offload == s.offload && next.zeroStage == s.zeroStage)
                    return std::nullopt;
                return RungChange { "ZeRO-" + std::to_string(next.zeroStage) + " with "
                        + (next.offload == Offload::All ? "optimizer and parameters" : "the optimizer") + " on the CPU",
                    next };
            },
            false },
        { "lora",
            [model, capacityBytes, total](const TrainingSetup& s) -> std::optional<RungChange> {
                if (s.quantizedBase || !model.hasDimensions())
                    return std::nullopt;
                TrainingSetup next = s;
                next.loraRank = s.loraRank > 0 ? s.loraRank : 16;
                next.zeroStage = 0;
                next.offload = Offload::None;
                if (s.precision == Precision::Fp32)
                    next.precision = Precision::MixedBf16;
                std::string change = "LoRA rank " + std::to_string(next.loraRank) + " on a 16-bit base";
                if (s.loraRank > 0 || total(next) > capacityBytes) {
                    next.quantizedBase = true;
                    change = "QLoRA: rank " + std::to_string(next.loraRank) + " on a 4-bit base";
                }
                return RungChange { change, next };
            },
            true },
    };
}

std::vector<RungDefinition> rungs(
    const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total)
{
    std::vector<RungDefinition> ladder;
    const std::vector<RungDefinition> parallel = parallelRungs(model, capacityBytes, total);
    if (setup.inference) {
        ladder = servingRungs(capacityBytes, total);
        ladder.push_back(parallel.front()); // tensor parallelism
        return ladder;
    }
    ladder = trainingRungs(model, capacityBytes, total);
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
