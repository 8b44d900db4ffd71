#pragma once

#include "core/planner/modelspec.h"
#include "core/planner/trainingsetup.h"

#include <string>

namespace oomlens::planner {

// The PyTorch FSDP equivalent of a set-up, beside deepSpeedConfig(): ZeRO-1/2 shard gradients and
// optimizer state (ShardingStrategy.SHARD_GRAD_OP; FSDP2 fully_shard(reshard_after_forward=False)),
// ZeRO-3 shards the parameters too (FULL_SHARD; reshard_after_forward=True), stage 0 replicates
// (NO_SHARD, which is DDP), CPU offload moves parameters and gradients to the host with the
// optimizer step (CPUOffload / CPUOffloadPolicy: FSDP cannot offload the optimizer state alone),
// mixed precision becomes the MixedPrecision policy, and checkpointing wraps every block or every
// K-th one.

// A Python snippet: FSDP2 (`fully_shard`, PyTorch 2.4+) with the FSDP1 equivalent in comments.
std::string fsdpSnippet(const ModelSpec& model, const TrainingSetup& setup);

// An `accelerate launch --config_file` YAML for the same set-up (FSDP, or plain multi-GPU / one
// GPU without sharding).
std::string accelerateConfig(const ModelSpec& model, const TrainingSetup& setup);

// FSDP1's ShardingStrategy name for the set-up's ZeRO stage.
std::string_view fsdpShardingStrategy(const TrainingSetup& setup);

// The Hugging Face class of one transformer block, which FSDP wraps and checkpoints
// (GPT2Block, LlamaDecoderLayer, MistralDecoderLayer, ...).
std::string blockClassName(const ModelSpec& model);

} // namespace oomlens::planner
