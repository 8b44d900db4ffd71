#include "core/planner/trainingsetup.h"

#include "core/nametable.h"

namespace oomlens::planner {

namespace {

constexpr NameTable<Precision, 4> precisionNames { {
    { Precision::Fp32, "fp32" },
    { Precision::MixedFp16, "mixed-fp16" },
    { Precision::MixedBf16, "mixed-bf16" },
    { Precision::Bf16, "bf16" },
} };
constexpr NameTable<OptimizerKind, 6> optimizerNames { {
    { OptimizerKind::AdamW, "adamw" },
    { OptimizerKind::AdamW8bit, "adamw-8bit" },
    { OptimizerKind::Sgd, "sgd" },
    { OptimizerKind::Adafactor, "adafactor" },
    { OptimizerKind::AdamWFused, "adamw-fused" },
    { OptimizerKind::AdamW8bitPaged, "adamw-paged-8bit" },
} };
constexpr NameTable<Checkpointing, 4> checkpointingNames { {
    { Checkpointing::None, "none" },
    { Checkpointing::Full, "full" },
    { Checkpointing::EveryK, "every" },
    { Checkpointing::Selective, "selective" },
} };
constexpr NameTable<WeightFormat, 5> weightFormatNames { {
    { WeightFormat::Auto, "auto" },
    { WeightFormat::Bf16, "bf16" },
    { WeightFormat::Fp8, "fp8" },
    { WeightFormat::Int8, "int8" },
    { WeightFormat::Int4, "int4" },
} };
constexpr NameTable<Attention, 2> attentionNames { {
    { Attention::Eager, "eager" },
    { Attention::Sdpa, "sdpa" },
} };
constexpr NameTable<Offload, 3> offloadNames { {
    { Offload::None, "none" },
    { Offload::Optimizer, "optimizer" },
    { Offload::All, "all" },
} };

constexpr NameTable<LoraTargets, 3> loraTargetNames { {
    { LoraTargets::AllLinear, "all" },
    { LoraTargets::Attention, "attention" },
    { LoraTargets::QueryValue, "qv" },
} };

} // namespace

std::string_view precisionName(Precision precision)
{
    return nameIn(precisionNames, precision);
}
std::string_view optimizerName(OptimizerKind optimizer)
{
    return nameIn(optimizerNames, optimizer);
}
std::string_view checkpointingName(Checkpointing checkpointing)
{
    return nameIn(checkpointingNames, checkpointing);
}
std::string_view attentionName(Attention attention)
{
    return nameIn(attentionNames, attention);
}
std::string_view offloadName(Offload offload)
{
    return nameIn(offloadNames, offload);
}
std::optional<Precision> precisionFromName(std::string_view name)
{
    return valueNamed(precisionNames, name);
}
std::optional<OptimizerKind> optimizerFromName(std::string_view name)
{
    return valueNamed(optimizerNames, name);
}
std::optional<Checkpointing> checkpointingFromName(std::string_view name)
{
    return valueNamed(checkpointingNames, name);
}
std::optional<Attention> attentionFromName(std::string_view name)
{
    return valueNamed(attentionNames, name);
}
std::optional<Offload> offloadFromName(std::string_view name)
{
    return valueNamed(offloadNames, name);
}
std::string_view weightFormatName(WeightFormat format)
{
    return nameIn(weightFormatNames, format);
}
std::optional<WeightFormat> weightFormatFromName(std::string_view name)
{
    return valueNamed(weightFormatNames, name);
}

double servingBytesPerWeight(const TrainingSetup& setup)
{
    switch (setup.weights) {
    case WeightFormat::Bf16:
        return 2.0;
    case WeightFormat::Fp8:
    case WeightFormat::Int8:
        return 1.0;
    case WeightFormat::Int4:
        return 0.5 + 4.0 / 128; // a 16-bit scale and a 16-bit zero point per group of 128 weights
    case WeightFormat::Auto:
        break;
    }
    return setup.precision == Precision::Fp32 ? 4.0 : 2.0;
}

std::string_view loraTargetsName(LoraTargets targets)
{
    return nameIn(loraTargetNames, targets);
}
std::optional<LoraTargets> loraTargetsFromName(std::string_view name)
{
    return valueNamed(loraTargetNames, name);
}

int TrainingSetup::checkpointedBlocks(int layers) const
{
    if (layers <= 0)
        return 0;
    switch (checkpointing) {
    case Checkpointing::None:
    case Checkpointing::Selective:
        return 0;
    case Checkpointing::Full:
        return layers;
    case Checkpointing::EveryK:
        return checkpointEvery > 0 ? (layers + checkpointEvery - 1) / checkpointEvery : layers;
    }
    return 0;
}

std::string checkpointingText(const TrainingSetup& setup)
{
    if (setup.checkpointing == Checkpointing::EveryK)
        return "every:" + std::to_string(setup.checkpointEvery);
    return std::string(checkpointingName(setup.checkpointing));
}

bool readCheckpointing(std::string_view text, TrainingSetup& setup)
{
    constexpr std::string_view every = "every:";
    if (text.substr(0, every.size()) == every) {
        const std::string_view digits = text.substr(every.size());
        if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string_view::npos)
            return false;
        const int k = std::stoi(std::string(digits));
        if (k < 1)
            return false;
        setup.checkpointing = k == 1 ? Checkpointing::Full : Checkpointing::EveryK;
        setup.checkpointEvery = k == 1 ? 0 : k;
        return true;
    }
    const auto named = checkpointingFromName(text);
    if (!named || *named == Checkpointing::EveryK)
        return false;
    setup.checkpointing = *named;
    setup.checkpointEvery = 0;
    return true;
}

namespace {

std::string parallelismProblem(const TrainingSetup& setup)
{
    const Parallelism& p = setup.parallel;
    if (p.tensor < 1 || p.context < 1 || p.pipeline < 1 || p.virtualStages < 1 || p.expert < 1 || p.microbatches < 0)
        return "--tp, --cp, --pp, --vpp, --ep and --microbatches must be at least 1";
    const int gpus = setup.totalGpus();
    if (gpus % p.modelParallelGpus() != 0)
        return std::to_string(gpus) + " GPUs do not split into TP " + std::to_string(p.tensor) + " x CP "
            + std::to_string(p.context) + " x PP " + std::to_string(p.pipeline)
            + " (give --gpus and --nodes for the whole world)";
    if (p.denseShardGroup(gpus) % p.expert != 0)
        return "--ep " + std::to_string(p.expert) + " must divide data x context parallel ("
            + std::to_string(p.denseShardGroup(gpus)) + ")";
    if (p.sequenceParallel && p.tensor < 2)
        return "sequence parallelism splits over the tensor-parallel group: give --tp 2 or more";
    if (p.virtualStages > 1 && p.pipeline < 2)
        return "--vpp (interleaved stages) needs --pp 2 or more";
    if (p.distributedOptimizer && setup.zeroStage > 0)
        return "the distributed optimizer and ZeRO both shard the optimizer: choose one";
    if (p.any() && setup.loraRank > 0)
        return "LoRA with tensor, pipeline or expert parallelism is not modelled";
    if (setup.inference && (setup.loraRank > 0 || setup.zeroStage > 0))
        return "--inference plans serving: no ZeRO and no LoRA";
    if (setup.inference && (setup.gpuMemoryUtilization <= 0 || setup.gpuMemoryUtilization > 1))
        return "--gpu-memory-utilization must be in (0, 1]";
    return {};
}

} // namespace

std::string setupProblem(const TrainingSetup& setup)
{
    if (setup.microBatch < 1 || setup.sequence < 1 || setup.gradientAccumulation < 1)
        return "micro-batch, sequence length and gradient accumulation must be at least 1";
    if (setup.gpusPerNode < 1 || setup.nodes < 1)
        return "GPUs per node and nodes must be at least 1";
    // Counted in 64 bits: the product of two flags could pass an int, and no job has a million GPUs.
    if (int64_t(setup.gpusPerNode) * setup.nodes > (int64_t(1) << 20))
        return "more than 2^20 GPUs in all: GPUs per node times nodes is beyond any cluster";
    if (setup.zeroStage < 0 || setup.zeroStage > 3)
        return "ZeRO stage must be 0, 1, 2 or 3";
    if (setup.offload != Offload::None && setup.zeroStage == 0)
        return "offload is a ZeRO feature: give --zero 1, 2 or 3";
    if (setup.offload == Offload::All && setup.zeroStage != 3)
        return "parameter offload needs ZeRO-3";
    if (setup.loraRank < 0)
        return "LoRA rank must be positive";
    if (setup.checkpointing == Checkpointing::EveryK && setup.checkpointEvery < 2)
        return "checkpointing every:K needs K of at least 2 (every:1 is full)";
    if (setup.quantizedBase && setup.loraRank == 0)
        return "a 4-bit base (QLoRA) needs a LoRA rank";
    if (setup.loraTargets != LoraTargets::AllLinear && setup.loraRank == 0)
        return "LoRA targets need a LoRA rank";
    return parallelismProblem(setup);
}

namespace {

std::string describeParallelism(const TrainingSetup& setup)
{
    const Parallelism& p = setup.parallel;
    std::string text;
    const auto add = [&text](const std::string& part) { text += (text.empty() ? "" : " x ") + part; };
    if (p.tensor > 1)
        add("TP " + std::to_string(p.tensor) + (p.sequenceParallel ? " (SP)" : ""));
    if (p.context > 1)
        add("CP " + std::to_string(p.context));
    if (p.pipeline > 1)
        add("PP " + std::to_string(p.pipeline)
            + (p.virtualStages > 1 ? " (VPP " + std::to_string(p.virtualStages) + ")" : ""));
    add("DP " + std::to_string(p.dataParallel(setup.totalGpus())));
    if (p.expert > 1)
        text += ", EP " + std::to_string(p.expert);
    if (p.pipeline > 1 && p.microbatches > 0)
        text += ", " + std::to_string(p.microbatches) + " microbatches";
    if (p.distributedOptimizer)
        text += ", distributed optimizer";
    return text;
}

} // namespace

std::string describeSetup(const TrainingSetup& setup)
{
    if (setup.inference) {
        std::string text = "serving " + std::to_string(setup.microBatch) + " x " + std::to_string(setup.sequence)
            + " tokens, weights "
            + (setup.weights == WeightFormat::Auto ? std::string(setup.precision == Precision::Fp32 ? "fp32" : "16-bit")
                                                   : std::string(weightFormatName(setup.weights)))
            + ", KV cache " + std::string(kvDtypeName(setup.kvDtype));
        if (setup.parallel.tensor > 1 || setup.parallel.pipeline > 1)
            text
                += ", TP " + std::to_string(setup.parallel.tensor) + " x PP " + std::to_string(setup.parallel.pipeline);
        return text;
    }
    std::string text = "micro-batch " + std::to_string(setup.microBatch) + " x seq " + std::to_string(setup.sequence)
        + ", " + std::string(precisionName(setup.precision)) + ", " + std::string(optimizerName(setup.optimizer));
    if (setup.gradientAccumulation > 1)
        text += ", accumulate " + std::to_string(setup.gradientAccumulation);
    text += ", checkpointing " + checkpointingText(setup) + ", " + std::string(attentionName(setup.attention))
        + " attention";
    const int gpus = setup.totalGpus();
    if (setup.zeroStage > 0)
        text += ", ZeRO-" + std::to_string(setup.zeroStage);
    text += gpus > 1 ? " over " + std::to_string(gpus) + " GPUs" : std::string(setup.zeroStage > 0 ? " on 1 GPU" : "");
    if (setup.offload != Offload::None)
        text += ", offload " + std::string(offloadName(setup.offload));
    if (setup.parallel.any())
        text += ", " + describeParallelism(setup);
    if (setup.loraRank > 0)
        text += std::string(setup.quantizedBase ? ", QLoRA" : ", LoRA") + " rank " + std::to_string(setup.loraRank)
            + (setup.loraTargets == LoraTargets::AllLinear ? std::string()
                                                           : " on " + std::string(loraTargetsName(setup.loraTargets)));
    return text;
}

} // namespace oomlens::planner
