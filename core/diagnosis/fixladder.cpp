#include "core/diagnosis/fixladder.h"

#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace oomlens {

namespace {

constexpr int assumedBlocks = 16; // a mid-sized transformer, when the trace cannot tell
constexpr int assumedRanks = 2; // the smallest data-parallel run, when the inputs cannot tell

std::string autocastDevice(Backend backend)
{
    if (backend == Backend::Mps || backend == Backend::Xpu)
        return backendText(backend);
    return "cuda"; // ROCm builds answer to "cuda" as well
}

std::string allocConfVariable(Backend backend)
{
    return backend == Backend::Hip ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
}

// "Bf16 autocast halves the 11.20 GiB of activations: -5.60 GiB; it would fit with 1.10 GiB to spare."
// `saving` is live tensor bytes the fix frees; the fit follows MemoryBudget's model.
void project(Fix& fix, std::string what, uint64_t saving, const MemoryBudget& budget)
{
    if (saving == 0)
        return;
    if (!what.empty())
        what[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(what[0])));
    fix.projectedSavingBytes = static_cast<int64_t>(saving);
    const auto spare = budget.spareAfter(saving);
    if (spare)
        fix.fitsAfter = *spare >= 0;
    const std::string fit = budget.fitPhrase(saving);
    fix.detail
        += " " + what + ": " + formatSignedBytes(-static_cast<int64_t>(saving)) + (fit.empty() ? "" : "; " + fit) + ".";
}

// Bands measured and this one empty: the fix has nothing to act on in this failure.
bool measuredEmpty(const MemoryBudget& budget, uint64_t bytes)
{
    return budget.bands.has_value() && bytes == 0;
}

Fix microBatch(const FixContext& context)
{
    Fix fix { FixKind::MicroBatch, "Halve the micro-batch and accumulate gradients",
        "Activations grow with the batch; two half batches with gradient accumulation train the same "
        "effective batch in the same number of optimizer steps.",
        "# plain PyTorch: the loader now yields half the batch\n"
        "accum_steps = 2\n"
        "for i, batch in enumerate(loader):\n"
        "    loss = model(**batch).loss / accum_steps\n"
        "    loss.backward()\n"
        "    if (i + 1) % accum_steps == 0:\n"
        "        optimizer.step()\n"
        "        optimizer.zero_grad(set_to_none=True)\n"
        "\n"
        "# Hugging Face Trainer: same effective batch of 16\n"
        "TrainingArguments(per_device_train_batch_size=8, gradient_accumulation_steps=2)",
        std::nullopt, std::nullopt, false };
    const uint64_t activations = context.budget.activationBytes();
    if (activations > 0)
        project(fix, "half the batch halves the " + formatBytes(activations) + " of activations", activations / 2,
            context.budget);
    return fix;
}

// Where bf16 compute exists, in the backend's own terms; empty where the backend has no single
// requirement worth naming.
std::string bf16Requirement(Backend backend)
{
    switch (backend) {
    case Backend::None:
    case Backend::Cuda:
    case Backend::CudaRuntime:
    case Backend::Cublas:
    case Backend::Cudnn:
        return " (needs Ampere or newer on NVIDIA)";
    case Backend::Mps:
        return " (MPS runs bf16 from macOS 14 on)";
    default:
        return {};
    }
}

Fix bf16(const FixContext& context)
{
    const std::string device = autocastDevice(context.backend);
    Fix fix { FixKind::Bf16, "Run forward and backward under bf16 autocast",
        "Activations saved for backward are stored in 16 bits instead of 32; bf16 keeps fp32's range, so no "
        "loss scaling is needed"
            + bf16Requirement(context.backend) + ". The optimizer still updates fp32 weights.",
        "with torch.autocast(\"" + device
            + "\", dtype=torch.bfloat16):\n"
              "    loss = model(**batch).loss\n"
              "loss.backward()\n"
              "\n"
              "# Hugging Face Trainer / accelerate\n"
              "TrainingArguments(bf16=True)            # accelerate launch --mixed_precision bf16",
        std::nullopt, std::nullopt, false };
    const uint64_t activations = context.budget.activationBytes();
    if (activations > 0)
        project(fix,
            "if they are fp32 today, bf16 autocast halves the " + formatBytes(activations)
                + " of activations (nothing to gain if "
                  "the run already uses bf16 or fp16)",
            activations / 2, context.budget);
    return fix;
}

Fix checkpointing(const FixContext& context)
{
    Fix fix { FixKind::Checkpointing, "Checkpoint activations block by block",
        "Only each block's input is kept; its inner activations are recomputed during backward, "
        "for about 20-30% more compute.",
        "from torch.utils.checkpoint import checkpoint\n"
        "# in the model's forward, per transformer block:\n"
        "x = checkpoint(block, x, use_reentrant=False)\n"
        "\n"
        "# Hugging Face models\n"
        "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={\"use_reentrant\": False})\n"
        "TrainingArguments(gradient_checkpointing=True)",
        std::nullopt, std::nullopt, false };
    const uint64_t activations = context.budget.activationBytes();
    if (activations > 0) {
        // Per-block checkpointing keeps every block's input plus one block's activations while it
        // is recomputed: A/N + N·input. How big a block's input is next to its saved activations
        // depends on the model (about 1/17 for a transformer layer, more for convolutions), so we
        // project the classic sqrt(N)-segment figure, A/√N, which never keeps less than that.
        const bool measured = context.budget.estimatedBlocks > 1;
        const int blocks = measured ? context.budget.estimatedBlocks : assumedBlocks;
        const auto kept
            = static_cast<uint64_t>(static_cast<double>(activations) / std::sqrt(static_cast<double>(blocks)));
        const std::string assumption = measured
            ? std::to_string(blocks) + " repeated blocks: " + context.budget.blocksEvidence
            : "assuming " + std::to_string(assumedBlocks)
                + " blocks: the stacks do not show how many the model repeats";
        project(fix,
            "checkpointing keeps about 1/sqrt(N) of the " + formatBytes(activations) + " of activations (" + assumption
                + ")",
            activations - kept, context.budget);
    }
    return fix;
}

// Allocator knobs exist for PyTorch's CUDA and ROCm caching allocators only.
bool hasCachingAllocatorKnobs(Backend backend)
{
    return backend == Backend::Cuda || backend == Backend::Hip || backend == Backend::Cublas
        || backend == Backend::CudaRuntime || backend == Backend::Cudnn;
}

std::optional<Fix> expandableSegments(const FixContext& context)
{
    if (context.expandableSegmentsOn || context.asyncAllocator || !hasCachingAllocatorKnobs(context.backend))
        return std::nullopt;
    const std::string variable = allocConfVariable(context.backend);
    Fix fix { FixKind::ExpandableSegments, "Let the allocator grow segments instead of splitting them",
        "With expandable segments the cache maps more memory into one growing segment, so freed space stays "
        "contiguous and a request no longer fails while gigabytes sit in split blocks.",
        variable
            + "=expandable_segments:True python train.py\n"
              "\n"
              "# or first thing in the script, before any CUDA call\n"
              "import os\n"
              "os.environ[\""
            + variable + "\"] = \"expandable_segments:True\"",
        std::nullopt, std::nullopt, false };
    if (context.preExpandableTorch)
        fix.detail += " The message comes from PyTorch 2.0 or older: expandable segments need 2.1 or newer.";
    // It frees no tensor: the split cache becomes usable, so `blocked` drops out of the budget.
    const uint64_t recovered = context.budget.fragmentedBytes;
    if (recovered > 0) {
        fix.projectedSavingBytes = static_cast<int64_t>(recovered);
        if (const auto spare = context.budget.spareAfter(0, true))
            fix.fitsAfter = *spare >= 0;
        const std::string fit = context.budget.fitPhrase(0, true);
        fix.detail += " It makes the " + formatBytes(recovered)
            + " now split in the cache usable again; live tensors stay as they are" + (fit.empty() ? "" : ": " + fit)
            + ".";
    }
    return fix;
}

std::optional<Fix> maxSplitSize(const FixContext& context)
{
    if (context.maxSplitSizeSet || context.asyncAllocator || !hasCachingAllocatorKnobs(context.backend))
        return std::nullopt;
    const std::string variable = allocConfVariable(context.backend);
    return Fix { FixKind::MaxSplitSize, "Stop the allocator from splitting large cached blocks",
        "Blocks above the limit are never split for smaller tensors, so big cached blocks stay whole for big "
        "requests. The older knob, for PyTorch before 2.1 or when expandable segments misbehave.",
        variable + "=max_split_size_mb:128 python train.py", std::nullopt, std::nullopt, false };
}

Fix sdpa(const FixContext& context)
{
    Fix fix { FixKind::Sdpa, "Use fused attention (SDPA / FlashAttention)",
        "Fused attention never materializes the seq x seq score matrix, so attention memory grows linearly "
        "with sequence length instead of quadratically. Same maths, no accuracy change.",
        "out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
        "# instead of (q @ k.transpose(-2, -1) * scale).softmax(-1) @ v\n"
        "\n"
        "# Hugging Face models\n"
        "AutoModelForCausalLM.from_pretrained(name, attn_implementation=\"sdpa\")  # or \"flash_attention_2\"",
        std::nullopt, std::nullopt, false };
    // Below 2% of live memory the name-based count of score buffers is noise, not a saving.
    const MemoryBudget& budget = context.budget;
    if (budget.quadraticBytes > 0 && budget.quadraticBytes * 50 >= budget.liveBytes)
        project(fix, "it avoids the " + formatBytes(context.budget.quadraticBytes) + " of seq x seq buffers",
            context.budget.quadraticBytes, context.budget);
    return fix;
}

Fix shorterSequences()
{
    return Fix { FixKind::ShorterSequences, "Shorten sequences or lower the resolution",
        "Activation memory grows with sequence length (quadratically for naive attention) and with image "
        "size. This changes what the model sees: declare it and re-check results.",
        "tokenizer(texts, truncation=True, max_length=1024)   # was 2048\n"
        "transforms.Resize(384)                               # was 512",
        std::nullopt, std::nullopt, true };
}

std::optional<Fix> optimizer8bit(const FixContext& context)
{
    if (measuredEmpty(context.budget, context.budget.band(Category::OptimizerState)))
        return std::nullopt;
    Fix fix { FixKind::Optimizer8bit, "Keep Adam's state in 8 bits",
        "Adam keeps two fp32 moments, 8 bytes per parameter; bitsandbytes stores them in 8 bits, about 2 bytes. "
        "Paged variants also spill the state to CPU on spikes. Convergence is usually unchanged; compare the loss "
        "curve.",
        "import bitsandbytes as bnb\n"
        "optimizer = bnb.optim.AdamW8bit(model.parameters(), lr=2e-5)   # or bnb.optim.PagedAdamW8bit\n"
        "\n"
        "# Hugging Face Trainer\n"
        "TrainingArguments(optim=\"adamw_bnb_8bit\")                      # or \"paged_adamw_8bit\"",
        std::nullopt, std::nullopt, false };
    const uint64_t state = context.budget.band(Category::OptimizerState);
    if (state > 0)
        project(fix, "8-bit state is a quarter of the " + formatBytes(state) + " of optimizer state", state - state / 4,
            context.budget);
    return fix;
}

std::optional<Fix> zero(const FixContext& context)
{
    const MemoryBudget& budget = context.budget;
    if (measuredEmpty(budget, budget.fixedStateBytes()))
        return std::nullopt;
    const bool ranksKnown = budget.gpuCount >= 2;
    const int ranks = ranksKnown ? budget.gpuCount : assumedRanks;
    // Stage k keeps 1/R of each sharded band on every rank, so it frees (1 − 1/R) of it:
    // ZeRO-1 the optimizer state, ZeRO-2 also the gradients, ZeRO-3 also the parameters.
    const auto shard = [ranks](uint64_t bytes) { return bytes - bytes / static_cast<uint64_t>(ranks); };
    const uint64_t stage1 = shard(budget.band(Category::OptimizerState));
    const uint64_t stage2 = stage1 + shard(budget.band(Category::Gradients));
    const uint64_t stage3 = stage2 + shard(budget.band(Category::Parameters));
    int stage = 3;
    uint64_t saving = stage3;
    for (const auto& [candidate, bytes] : { std::pair { 1, stage1 }, std::pair { 2, stage2 } }) {
        const auto spare = budget.spareAfter(bytes);
        if (bytes > 0 && spare && *spare >= 0) {
            stage = candidate;
            saving = bytes;
            break;
        }
    }
    const std::string stageText = std::to_string(stage);
    Fix fix { FixKind::Zero, "Shard training state across GPUs (ZeRO-" + stageText + " / FSDP)",
        "Data-parallel ranks each keep a full copy of optimizer state, gradients and parameters; ZeRO-1 shards "
        "the optimizer state, ZeRO-2 also the gradients, ZeRO-3 (FSDP FULL_SHARD) also the parameters.",
        "// DeepSpeed ds_config.json\n"
        "{\n"
        "  \"zero_optimization\": {\"stage\": "
            + stageText
            + ", \"overlap_comm\": true, \"contiguous_gradients\": true},\n"
              "  \"bf16\": {\"enabled\": true},\n"
              "  \"train_micro_batch_size_per_gpu\": \"auto\"\n"
              "}\n"
              "\n"
              "# PyTorch FSDP: FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2\n"
              "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy\n"
              "model = FSDP(model, sharding_strategy=ShardingStrategy."
            + std::string(stage == 3 ? "FULL_SHARD" : "SHARD_GRAD_OP") + ")",
        std::nullopt, std::nullopt, false };
    fix.detail += ranksKnown ? " The run has " + std::to_string(ranks) + " GPUs (" + budget.gpuCountEvidence + ")."
                             : " The inputs do not show how many GPUs the run has; the figures assume "
            + std::to_string(ranks) + ", and every extra GPU shards the state further.";
    if (saving > 0)
        project(fix,
            "ZeRO-" + stageText + " over " + std::to_string(ranks) + " GPUs keeps 1/" + std::to_string(ranks)
                + " of the sharded state",
            saving, budget);
    return fix;
}

std::optional<Fix> offload(const FixContext& context)
{
    if (measuredEmpty(context.budget, context.budget.fixedStateBytes()))
        return std::nullopt;
    Fix fix { FixKind::Offload, "Offload optimizer state (and parameters) to CPU or NVMe",
        "The last resort on one GPU: the state lives in host memory and crosses PCIe every step, several times slower.",
        "// DeepSpeed ds_config.json\n"
        "{\n"
        "  \"zero_optimization\": {\n"
        "    \"stage\": 3,\n"
        "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true},\n"
        "    \"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true}\n"
        "  }\n"
        "}",
        std::nullopt, std::nullopt, false };
    const uint64_t state = context.budget.band(Category::OptimizerState);
    if (state > 0)
        project(fix, "offloading moves the " + formatBytes(state) + " of optimizer state off the card", state,
            context.budget);
    return fix;
}

// Offered only for a model whose layers the stacks name (fixladderlora.h): the snippet's
// target_modules are that model's, and a convolutional network, or a model nothing shows, gets no
// adapter it could not take.
std::optional<Fix> lora(const FixContext& context)
{
    if (!context.lora.applies()
        || measuredEmpty(
            context.budget, context.budget.band(Category::OptimizerState) + context.budget.band(Category::Gradients)))
        return std::nullopt;
    const LoraTarget& target = context.lora;
    std::string snippet = "from peft import LoraConfig, get_peft_model\n"
                          "model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32,\n"
                          "    target_modules="
        + target.modules + (target.taskType.empty() ? "" : ",\n    task_type=\"" + target.taskType + "\"") + "))";
    if (target.transformers)
        snippet += "\n\n# QLoRA: load the frozen base in 4 bits\n"
                   "BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=\"nf4\", "
                   "bnb_4bit_compute_dtype=torch.bfloat16)";
    Fix fix { FixKind::Lora,
        target.transformers ? "Fine-tune adapters instead of the whole model (LoRA / QLoRA)"
                            : "Fine-tune adapters instead of the whole model (LoRA)",
        "The base weights are frozen and only small low-rank adapters get gradients and optimizer state"
            + std::string(target.transformers ? "; QLoRA also stores the frozen base in 4 bits" : "")
            + ". This trains a different, smaller set of weights: it changes the experiment. The adapted layers "
              "follow from "
            + target.evidence + ".",
        std::move(snippet), std::nullopt, std::nullopt, true };
    const uint64_t state = context.budget.band(Category::OptimizerState) + context.budget.band(Category::Gradients);
    if (state > 0)
        project(fix, "frozen weights need no gradients or optimizer state (" + formatBytes(state) + " today)", state,
            context.budget);
    return fix;
}

} // namespace

std::optional<Fix> makeFix(FixKind kind, const FixContext& context)
{
    switch (kind) {
    case FixKind::MicroBatch:
        return microBatch(context);
    case FixKind::Bf16:
        return bf16(context);
    case FixKind::Checkpointing:
        // Never recommend what is on: offer what is left of the same idea.
        if (context.checkpointingOn)
            return makeDistributedFix(FixKind::OffloadCheckpointedInputs, context);
        return checkpointing(context);
    case FixKind::ExpandableSegments:
        return expandableSegments(context);
    case FixKind::MaxSplitSize:
        return maxSplitSize(context);
    case FixKind::Sdpa:
        return sdpa(context);
    case FixKind::ShorterSequences:
        return shorterSequences();
    case FixKind::Optimizer8bit:
        return optimizer8bit(context);
    case FixKind::Zero:
        return zero(context);
    case FixKind::Offload:
        return offload(context);
    case FixKind::Lora:
        return lora(context);
    case FixKind::HostFewerWorkers:
    case FixKind::HostSharedDataset:
    case FixKind::HostPinMemory:
    case FixKind::HostLazyCheckpoint:
    case FixKind::HostMemoryLimit:
    case FixKind::HostSharedMemory:
        return makeHostMemoryFix(kind, context);
    case FixKind::AvoidRecordStreams:
    case FixKind::Fsdp2:
    case FixKind::SynchronizeBeforeReuse:
    case FixKind::ReshardAfterForward:
    case FixKind::FewerAllGathersInFlight:
    case FixKind::BucketSizes:
    case FixKind::GradientAsBucketView:
    case FixKind::SyncGradientsEachMicroBatch:
    case FixKind::ShareGraphPool:
    case FixKind::FewerGraphShapes:
    case FixKind::EagerFallback:
    case FixKind::ReleaseBeforeCapture:
    case FixKind::OffloadCheckpointedInputs:
        return makeDistributedFix(kind, context);
    default:
        return makeCaseFix(kind, context);
    }
}

namespace {

// Rungs that need a library the backend does not have: Apple's MPS is one GPU without NCCL, so
// DeepSpeed/FSDP sharding and offload cannot run there, and bitsandbytes' 8-bit optimizers are built
// for CUDA and ROCm.
bool existsOn(FixKind kind, Backend backend)
{
    if (backend != Backend::Mps)
        return true;
    return kind != FixKind::Zero && kind != FixKind::Offload && kind != FixKind::Optimizer8bit;
}

} // namespace

void appendFixes(std::vector<Fix>& fixes, std::initializer_list<FixKind> kinds, const FixContext& context)
{
    for (const FixKind kind : kinds) {
        if (!existsOn(kind, context.backend))
            continue;
        auto fix = makeFix(kind, context);
        if (!fix)
            continue;
        const bool present = std::any_of(fixes.begin(), fixes.end(), [&](const Fix& f) { return f.kind == fix->kind; });
        if (!present)
            fixes.push_back(std::move(*fix));
    }
}

void appendLadder(std::vector<Fix>& fixes, const FixContext& context)
{
    appendFixes(fixes,
        { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments, FixKind::Sdpa,
            FixKind::ShorterSequences, FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::Lora },
        context);
}

} // namespace oomlens
