#include "core/planner/planladder.h"

#include <functional>
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

std::vector<RungDefinition> rungs(const ModelSpec& model, uint64_t capacityBytes, const PlanTotal& total)
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
                if (s.totalGpus() < 2 || s.zeroStage >= 3 || s.loraRank > 0)
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
                if (s.offload == Offload::All || s.loraRank > 0)
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

} // namespace

std::vector<LadderRung> climbLadder(
    const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total)
{
    std::vector<LadderRung> climbed;
    if (total(setup) <= capacityBytes)
        return climbed;
    TrainingSetup current = setup;
    for (const RungDefinition& rung : rungs(model, capacityBytes, total)) {
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
