#pragma once

#include "core/planner/kvcache.h"
#include "core/planner/modelspec.h"
#include "core/planner/parallelism.h"

#include <optional>
#include <string>
#include <string_view>

namespace oomlens::planner {

// fp32; fp16/bf16 autocast over fp32 weights (the weights are the fp32 master copy); pure bf16
// weights, gradients and optimizer state.
enum class Precision { Fp32, MixedFp16, MixedBf16, Bf16 };
// AdamW is torch.optim.AdamW's default foreach step; AdamWFused its fused=True kernel (no step
// intermediates); AdamW8bitPaged bitsandbytes' PagedAdamW8bit, whose 8-bit state lives in CUDA
// unified memory that the driver pages out to host memory under pressure.
enum class OptimizerKind { AdamW, AdamW8bit, Sgd, Adafactor, AdamWFused, AdamW8bitPaged };
// EveryK checkpoints one block in every `checkpointEvery` (blocks 0, K, 2K, ...), the rest keep
// their activations: 1/K of full checkpointing's recompute. Selective is Megatron's selective
// recompute: every block keeps its activations but the attention core (scores, softmax, its
// dropout) is recomputed, so the a·s² terms go (Korthikanti et al. Table 2's last rows).
enum class Checkpointing { None, Full, EveryK, Selective };
// Eager attention materializes the seq x seq scores; SDPA / FlashAttention never does.
enum class Attention { Eager, Sdpa };
// The weights' format when serving: the training precision's 16 bits, or quantized (fp8, int8 as
// LLM.int8()/W8A8, int4 as GPTQ/AWQ with group-128 scales).
enum class WeightFormat { Auto, Bf16, Fp8, Int8, Int4 };
// DeepSpeed ZeRO-Offload: optimizer state (and fp32 gradients) to host; `All` adds parameters (ZeRO-3 only).
enum class Offload { None, Optimizer, All };

// How one training run is set up, as far as memory is concerned.
struct TrainingSetup
{
    int microBatch = 1;
    int sequence = 1024;
    Precision precision = Precision::MixedBf16;
    OptimizerKind optimizer = OptimizerKind::AdamW;
    int gradientAccumulation = 1;
    Checkpointing checkpointing = Checkpointing::None;
    int checkpointEvery = 0; // K of Checkpointing::EveryK, at least 2 (every:1 is full)
    Attention attention = Attention::Sdpa;
    int gpusPerNode = 1;
    int nodes = 1;
    int zeroStage = 0; // 0: plain PyTorch (DDP); 1-3: DeepSpeed ZeRO / FSDP
    Offload offload = Offload::None;
    int loraRank = 0; // 0: full fine-tuning
    bool quantizedBase = false; // QLoRA: the frozen base in 4-bit NF4
    LoraTargets loraTargets = LoraTargets::AllLinear; // QLoRA quantizes every projection whatever the targets
    Parallelism parallel; // TP / SP / CP / PP / VPP / EP and the distributed optimizer
    // Serving instead of training: microBatch concurrent sequences of `sequence` tokens, no
    // gradients or optimizer, a KV cache. vLLM reserves gpuMemoryUtilization of the card.
    bool inference = false;
    KvDtype kvDtype = KvDtype::Bf16;
    WeightFormat weights = WeightFormat::Auto;
    double gpuMemoryUtilization = 0.9;

    int totalGpus() const { return gpusPerNode * nodes; }
    // The GPUs ZeRO and the distributed optimizer shard the (dense) model states over.
    int shardingGpus() const { return parallel.any() ? parallel.denseShardGroup(totalGpus()) : totalGpus(); }
    bool mixed() const { return precision == Precision::MixedFp16 || precision == Precision::MixedBf16; }
    // Bytes of one activation element: 4 in fp32, 2 under autocast or in bf16.
    int activationBytes() const { return precision == Precision::Fp32 ? 4 : 2; }
    // Blocks of `layers` that keep only their input and are recomputed in backward.
    int checkpointedBlocks(int layers) const;
    bool eightBitOptimizer() const
    {
        return optimizer == OptimizerKind::AdamW8bit || optimizer == OptimizerKind::AdamW8bitPaged;
    }
    bool adamFamily() const { return optimizer != OptimizerKind::Sgd && optimizer != OptimizerKind::Adafactor; }
};

// The flag spellings of product.md §5 ("mixed-bf16", "adamw-8bit", "sdpa", ...), both ways.
std::string_view precisionName(Precision precision);
std::string_view optimizerName(OptimizerKind optimizer);
std::string_view checkpointingName(Checkpointing checkpointing);
std::string_view attentionName(Attention attention);
std::string_view offloadName(Offload offload);
std::string_view weightFormatName(WeightFormat format); // "auto", "bf16", "fp8", "int8", "int4"
std::optional<WeightFormat> weightFormatFromName(std::string_view name);
// Bytes per weight when serving: the training precision's for Auto (4 in fp32, else 2), 1 for
// fp8 and int8, and int4's half byte plus a 16-bit scale and zero point per group of 128.
double servingBytesPerWeight(const TrainingSetup& setup);
std::string_view loraTargetsName(LoraTargets targets); // "all", "attention", "qv"
std::optional<Precision> precisionFromName(std::string_view name);
std::optional<OptimizerKind> optimizerFromName(std::string_view name);
std::optional<Checkpointing> checkpointingFromName(std::string_view name);
std::optional<Attention> attentionFromName(std::string_view name);
std::optional<Offload> offloadFromName(std::string_view name);
std::optional<LoraTargets> loraTargetsFromName(std::string_view name);
// The --checkpointing spelling of a set-up: "none", "full" or "every:K".
std::string checkpointingText(const TrainingSetup& setup);
// Reads "none", "full" or "every:K" into the set-up; false when it is none of them. "every:1"
// is full checkpointing.
bool readCheckpointing(std::string_view text, TrainingSetup& setup);

// Why the set-up cannot run as described ("parameter offload needs ZeRO-3"); empty when it can.
std::string setupProblem(const TrainingSetup& setup);

// One line: "micro-batch 8 x seq 1024, mixed-bf16, AdamW, ZeRO-2 over 8 GPUs, ...".
std::string describeSetup(const TrainingSetup& setup);

} // namespace oomlens::planner
