#include "core/planner/fsdpconfig.h"

#include <algorithm>
#include <cctype>

namespace oomlens::planner {

namespace {

bool nameContains(const ModelSpec& model, std::string_view part)
{
    std::string name = model.name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    return name.find(part) != std::string::npos;
}

// The module list holding the blocks, as Hugging Face names it.
std::string blockListExpression(const ModelSpec& model)
{
    return model.layerNormBiases && !model.gatedMlp ? "model.transformer.h" : "model.model.layers";
}

std::string_view mixedPrecisionName(const TrainingSetup& setup)
{
    switch (setup.precision) {
    case Precision::MixedFp16:
        return "fp16";
    case Precision::MixedBf16:
        return "bf16";
    case Precision::Fp32:
    case Precision::Bf16:
        return "no";
    }
    return "no";
}

// The optimizer line, after sharding (FSDP's optimizer sees the sharded parameters).
std::string optimizerLine(const TrainingSetup& setup)
{
    switch (setup.optimizer) {
    case OptimizerKind::AdamW:
        return "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)  # foreach: one parameter-sized "
               "intermediate in step()\n";
    case OptimizerKind::AdamWFused:
        return "optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=True)\n";
    case OptimizerKind::AdamW8bit:
        return "import bitsandbytes as bnb\noptimizer = bnb.optim.AdamW8bit(model.parameters(), lr=2e-5)\n";
    case OptimizerKind::AdamW8bitPaged:
        return "import bitsandbytes as bnb\n"
               "optimizer = bnb.optim.PagedAdamW8bit(model.parameters(), lr=2e-5)  # state pages to host memory "
               "under pressure\n";
    case OptimizerKind::Sgd:
        return "optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)\n";
    case OptimizerKind::Adafactor:
        return "from transformers.optimization import Adafactor\n"
               "optimizer = Adafactor(model.parameters(), lr=1e-3, relative_step=False, scale_parameter=False)\n";
    }
    return {};
}

// The 16-bit dtype of mixed precision, as torch names it.
std::string halfDtype(const TrainingSetup& setup)
{
    return setup.precision == Precision::MixedFp16 ? "float16" : "bfloat16";
}

bool checkpointsBlocks(const TrainingSetup& setup)
{
    return setup.checkpointing == Checkpointing::Full || setup.checkpointing == Checkpointing::EveryK;
}

} // namespace

std::string_view fsdpShardingStrategy(const TrainingSetup& setup)
{
    if (setup.zeroStage >= 3)
        return "FULL_SHARD";
    if (setup.zeroStage >= 1)
        return "SHARD_GRAD_OP";
    return "NO_SHARD";
}

std::string blockClassName(const ModelSpec& model)
{
    if (nameContains(model, "mistral"))
        return "MistralDecoderLayer";
    if (nameContains(model, "qwen2"))
        return "Qwen2DecoderLayer";
    if (model.layerNormBiases && !model.gatedMlp)
        return "GPT2Block";
    return "LlamaDecoderLayer";
}

namespace {

// The launch line and the imports the snippet's lines below need.
std::string snippetPreamble(const TrainingSetup& setup)
{
    std::string py = "# FSDP equivalent of: " + describeSetup(setup) + "\n";
    py += "# launch: torchrun --nnodes " + std::to_string(setup.nodes) + " --nproc-per-node "
        + std::to_string(setup.gpusPerNode) + " train.py\n";
    py += "import functools\n\nimport torch\n";
    if (setup.zeroStage > 0) {
        py += "from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy, CPUOffloadPolicy  # PyTorch 2.6+; "
              "2.4-2.5: torch.distributed._composable.fsdp\n";
    }
    if (checkpointsBlocks(setup)) {
        py += "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing, "
              "checkpoint_wrapper\n";
    }
    py += "\n";
    if (setup.precision == Precision::Bf16)
        py += "model = model.to(torch.bfloat16)  # pure bf16: weights, gradients and optimizer state\n";
    return py;
}

// Checkpointing wraps the blocks before sharding, so that each wrapper holds a whole block.
std::string checkpointingLines(const TrainingSetup& setup, const std::string& blocks, const std::string& blockClass)
{
    if (!checkpointsBlocks(setup))
        return {};
    std::string py;
    if (setup.checkpointing == Checkpointing::EveryK) {
        py += "# activation checkpointing on one block in every " + std::to_string(setup.checkpointEvery)
            + " (blocks 0, " + std::to_string(setup.checkpointEvery) + ", ...)\n";
        py += "checkpointed = {id(block) for block in " + blocks + "[::" + std::to_string(setup.checkpointEvery)
            + "]}\n";
        py += "apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,\n"
              "                               check_fn=lambda module: id(module) in checkpointed)\n";
    } else {
        py += "# activation checkpointing on every block\n";
        py += "apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,\n"
              "                               check_fn=lambda module: isinstance(module, "
            + blockClass + "))\n";
    }
    return py;
}

// Without ZeRO there is nothing to shard: DDP over several GPUs, the model as it is on one.
std::string unshardedLines(const TrainingSetup& setup)
{
    std::string py;
    if (setup.totalGpus() > 1) {
        py += "# ZeRO-0 is plain data parallelism: DDP (FSDP1's ShardingStrategy.NO_SHARD is the same)\n";
        py += "model = torch.nn.parallel.DistributedDataParallel(model.cuda(), gradient_as_bucket_view=True)\n";
    } else {
        py += "# one GPU without ZeRO: nothing to shard\nmodel = model.cuda()\n";
    }
    py += optimizerLine(setup);
    if (setup.mixed()) {
        py += std::string("# mixed precision: autocast in the training step\n")
            + "with torch.autocast(\"cuda\", dtype=torch." + halfDtype(setup) + "):\n    loss = model(**batch).loss\n";
    }
    return py;
}

// FSDP2: fully_shard on every block, then on the model; ZeRO-3 reshards after forward.
std::string fullyShardLines(const TrainingSetup& setup, const std::string& blocks)
{
    std::string py;
    const bool reshard = setup.zeroStage >= 3;
    std::string options = "reshard_after_forward=" + std::string(reshard ? "True" : "False");
    if (setup.mixed()) {
        py += "mp = MixedPrecisionPolicy(param_dtype=torch." + halfDtype(setup) + ", reduce_dtype=torch.float32)\n";
        options += ", mp_policy=mp";
    }
    if (setup.offload != Offload::None) {
        py += "# FSDP offloads parameters and gradients together and steps the optimizer on the CPU\n";
        options += ", offload_policy=CPUOffloadPolicy(pin_memory=True)";
    }
    py += "# ZeRO-" + std::to_string(setup.zeroStage) + " -> " + std::string(reshard ? "FULL_SHARD" : "SHARD_GRAD_OP")
        + ": "
        + (reshard ? "parameters, gradients and optimizer state sharded"
                   : "gradients and optimizer state sharded, parameters kept whole between forward and backward")
        + "\n";
    py += "for block in " + blocks + ":\n    fully_shard(block, " + options + ")\n";
    py += "fully_shard(model, " + options + ")\n";
    py += optimizerLine(setup);
    if (setup.precision == Precision::MixedFp16)
        py += "scaler = torch.amp.GradScaler()  # FSDP1: ShardedGradScaler\n";
    return py;
}

// The same set-up in FSDP1's wrapper, as comments for those on older code.
std::string fsdp1Comment(const TrainingSetup& setup, const std::string& blockClass)
{
    std::string py = "\n# FSDP1 (FullyShardedDataParallel) equivalent:\n";
    py += "# from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, MixedPrecision, "
          "CPUOffload\n";
    py += "# from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n";
    py += "# model = FSDP(model, sharding_strategy=ShardingStrategy." + std::string(fsdpShardingStrategy(setup))
        + ",\n";
    py += "#              auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={"
        + blockClass + "}),\n";
    if (setup.mixed()) {
        const std::string dtype = "torch." + halfDtype(setup);
        py += "#              mixed_precision=MixedPrecision(param_dtype=" + dtype + ", reduce_dtype=torch.float32, "
            + "buffer_dtype=" + dtype + "),\n";
    }
    py += "#              cpu_offload=CPUOffload(offload_params="
        + std::string(setup.offload != Offload::None ? "True" : "False") + "),\n";
    py += "#              device_id=torch.cuda.current_device(), use_orig_params=True)\n";
    return py;
}

} // namespace

std::string fsdpSnippet(const ModelSpec& model, const TrainingSetup& setup)
{
    const std::string blocks = blockListExpression(model);
    const std::string blockClass = blockClassName(model);
    std::string py = snippetPreamble(setup);
    py += checkpointingLines(setup, blocks, blockClass);
    const bool sharded = setup.zeroStage > 0;
    if (!sharded)
        return py + unshardedLines(setup);
    return py + fullyShardLines(setup, blocks) + fsdp1Comment(setup, blockClass);
}

std::string accelerateConfig(const ModelSpec& model, const TrainingSetup& setup)
{
    const int gpus = setup.totalGpus();
    std::string yaml = "# accelerate launch --config_file this.yaml train.py\n";
    yaml += "compute_environment: LOCAL_MACHINE\n";
    if (setup.zeroStage > 0) {
        yaml += "distributed_type: FSDP\n";
        yaml += "fsdp_config:\n";
        yaml += "  fsdp_sharding_strategy: " + std::string(fsdpShardingStrategy(setup)) + "\n";
        yaml += "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n";
        yaml += "  fsdp_transformer_layer_cls_to_wrap: " + blockClassName(model) + "\n";
        yaml += "  fsdp_offload_params: " + std::string(setup.offload != Offload::None ? "true" : "false") + "\n";
        // accelerate checkpoints every wrapped block; every K-th needs the snippet's check_fn.
        yaml += "  fsdp_activation_checkpointing: "
            + std::string(setup.checkpointing == Checkpointing::Full ? "true" : "false") + "\n";
        yaml += "  fsdp_backward_prefetch: BACKWARD_PRE\n";
        yaml += "  fsdp_state_dict_type: SHARDED_STATE_DICT\n";
        yaml += "  fsdp_cpu_ram_efficient_loading: true\n";
        yaml += "  fsdp_sync_module_states: true\n";
        yaml += "  fsdp_use_orig_params: true\n";
    } else {
        yaml += std::string("distributed_type: ") + (gpus > 1 ? "MULTI_GPU" : "'NO'") + "\n";
    }
    yaml += "mixed_precision: " + std::string(mixedPrecisionName(setup)) + "\n";
    yaml += "num_machines: " + std::to_string(setup.nodes) + "\n";
    yaml += "num_processes: " + std::to_string(gpus) + "\n";
    yaml += "machine_rank: 0\n";
    yaml += "main_training_function: main\n";
    yaml += "use_cpu: false\n";
    if (setup.checkpointing == Checkpointing::EveryK)
        yaml += "# one block in every " + std::to_string(setup.checkpointEvery)
            + " checkpointed: apply it in the script (see the FSDP snippet)\n";
    else if (setup.checkpointing == Checkpointing::Full && setup.zeroStage == 0)
        yaml += "# activation checkpointing: model.gradient_checkpointing_enable() in the script\n";
    return yaml;
}

} // namespace oomlens::planner
