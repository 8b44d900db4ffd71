#include "core/diagnosis/fixkind.h"

#include "core/nametable.h"

namespace oomlens {

namespace {

constexpr NameTable<FixKind, 60> fixIds { {
    { FixKind::MicroBatch, "micro_batch" },
    { FixKind::Bf16, "bf16" },
    { FixKind::Checkpointing, "checkpointing" },
    { FixKind::ExpandableSegments, "expandable_segments" },
    { FixKind::MaxSplitSize, "max_split_size" },
    { FixKind::Sdpa, "sdpa" },
    { FixKind::ShorterSequences, "shorter_sequences" },
    { FixKind::Optimizer8bit, "optimizer_8bit" },
    { FixKind::Zero, "zero" },
    { FixKind::Offload, "offload" },
    { FixKind::Lora, "lora" },
    { FixKind::StopOtherProcess, "stop_other_process" },
    { FixKind::ChooseGpu, "choose_gpu" },
    { FixKind::MemoryFraction, "memory_fraction" },
    { FixKind::MpsWatermark, "mps_watermark" },
    { FixKind::EvalAccumulation, "eval_accumulation_steps" },
    { FixKind::EvalBatchSize, "eval_batch_size" },
    { FixKind::ReleaseReferences, "release_references" },
    { FixKind::OptimizerForeach, "optimizer_foreach" },
    { FixKind::LengthBucketing, "length_bucketing" },
    { FixKind::LoadToCpu, "load_to_cpu" },
    { FixKind::HostFewerWorkers, "fewer_workers" },
    { FixKind::HostSharedDataset, "shared_dataset" },
    { FixKind::HostPinMemory, "pin_memory_off" },
    { FixKind::HostLazyCheckpoint, "lazy_checkpoint_load" },
    { FixKind::HostMemoryLimit, "raise_host_limit" },
    { FixKind::HostSharedMemory, "shared_memory_size" },
    { FixKind::AvoidRecordStreams, "avoid_record_streams" },
    { FixKind::Fsdp2, "fsdp2" },
    { FixKind::SynchronizeBeforeReuse, "synchronize_before_reuse" },
    { FixKind::ReshardAfterForward, "reshard_after_forward" },
    { FixKind::FewerAllGathersInFlight, "fewer_all_gathers_in_flight" },
    { FixKind::BucketSizes, "bucket_sizes" },
    { FixKind::GradientAsBucketView, "gradient_as_bucket_view" },
    { FixKind::SyncGradientsEachMicroBatch, "sync_gradients_each_micro_batch" },
    { FixKind::ShareGraphPool, "share_graph_pool" },
    { FixKind::FewerGraphShapes, "fewer_graph_shapes" },
    { FixKind::EagerFallback, "eager_fallback" },
    { FixKind::ReleaseBeforeCapture, "release_before_capture" },
    { FixKind::OffloadCheckpointedInputs, "offload_checkpointed_inputs" },
    { FixKind::SplitTensor, "split_tensor" },
    { FixKind::OffloadTrainerDuringRollout, "offload_trainer_during_rollout" },
    { FixKind::EngineMemoryFraction, "engine_memory_fraction" },
    { FixKind::EngineMaxNumSeqs, "engine_max_num_seqs" },
    { FixKind::FreeEngineCacheBeforeUpdate, "free_engine_cache_before_update" },
    { FixKind::BucketedWeightSync, "bucketed_weight_sync" },
    { FixKind::MoreRolloutGpus, "more_rollout_gpus" },
    { FixKind::EngineBatchedTokens, "engine_batched_tokens" },
    { FixKind::EngineContextLength, "engine_context_length" },
    { FixKind::EngineKvCacheDtype, "engine_kv_cache_dtype" },
    { FixKind::EngineQuantizedWeights, "engine_quantized_weights" },
    { FixKind::EngineTensorParallel, "engine_tensor_parallel" },
    { FixKind::EngineCpuOffload, "engine_cpu_offload" },
    { FixKind::GenerateFewerTokens, "generate_fewer_tokens" },
    { FixKind::GenerateCache, "generate_cache" },
    { FixKind::DiffusersCpuOffload, "diffusers_cpu_offload" },
    { FixKind::DiffusersVaeTiling, "diffusers_vae_tiling" },
    { FixKind::DiffusersAttentionSlicing, "diffusers_attention_slicing" },
    { FixKind::DiffusersResolution, "diffusers_lower_resolution" },
    { FixKind::SmallerBatch, "smaller_batch" },
} };

} // namespace

std::string_view fixId(FixKind kind)
{
    return nameIn(fixIds, kind);
}

std::optional<FixKind> fixKindFromId(std::string_view id)
{
    return valueNamed(fixIds, id);
}

} // namespace oomlens
