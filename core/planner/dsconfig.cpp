#include "core/planner/dsconfig.h"

namespace oomlens::planner {

nlohmann::ordered_json deepSpeedConfig(const TrainingSetup& setup)
{
    using Json = nlohmann::ordered_json;
    Json config;
    // The data-parallel replicas' batch. Each factor may be up to 2^30 (the flags' bound): past
    // 64 bits the figure is written as a floating-point number rather than wrapped.
    const int64_t replicas = setup.parallel.dataParallel(setup.totalGpus());
    int64_t trainBatch = 0;
    if (__builtin_mul_overflow(int64_t(setup.microBatch), int64_t(setup.gradientAccumulation), &trainBatch)
        || __builtin_mul_overflow(trainBatch, replicas, &trainBatch))
        config["train_batch_size"]
            = static_cast<double>(setup.microBatch) * setup.gradientAccumulation * static_cast<double>(replicas);
    else
        config["train_batch_size"] = trainBatch;
    config["train_micro_batch_size_per_gpu"] = setup.microBatch;
    config["gradient_accumulation_steps"] = setup.gradientAccumulation;
    config["gradient_clipping"] = 1.0;
    if (setup.precision == Precision::MixedFp16) {
        config["fp16"] = { { "enabled", true }, { "loss_scale", 0 }, { "loss_scale_window", 1000 },
            { "initial_scale_power", 16 }, { "hysteresis", 2 }, { "min_loss_scale", 1 } };
    } else if (setup.precision == Precision::MixedBf16 || setup.precision == Precision::Bf16) {
        config["bf16"] = { { "enabled", true } };
    }
    // DeepSpeed's own AdamW is fused either way; bitsandbytes' 8-bit (paged) AdamW and
    // Adafactor are client optimizers passed to deepspeed.initialize instead.
    if (setup.optimizer == OptimizerKind::AdamW || setup.optimizer == OptimizerKind::AdamWFused) {
        config["optimizer"] = { { "type", "AdamW" },
            { "params", { { "lr", 2e-5 }, { "betas", { 0.9, 0.999 } }, { "eps", 1e-8 }, { "weight_decay", 0.0 } } } };
    } else if (setup.optimizer == OptimizerKind::Sgd) {
        config["optimizer"] = { { "type", "SGD" }, { "params", { { "lr", 1e-3 }, { "momentum", 0.9 } } } };
    }

    Json zero;
    zero["stage"] = setup.zeroStage;
    if (setup.zeroStage > 0) {
        zero["overlap_comm"] = true;
        zero["contiguous_gradients"] = true;
        zero["reduce_bucket_size"] = 5e8;
    }
    if (setup.zeroStage >= 1 && setup.zeroStage <= 2) {
        zero["allgather_partitions"] = true;
        zero["allgather_bucket_size"] = 5e8;
        zero["reduce_scatter"] = true;
    }
    if (setup.offload != Offload::None)
        zero["offload_optimizer"] = { { "device", "cpu" }, { "pin_memory", true } };
    if (setup.offload == Offload::All)
        zero["offload_param"] = { { "device", "cpu" }, { "pin_memory", true } };
    if (setup.zeroStage == 3) {
        zero["sub_group_size"] = 1e9;
        zero["stage3_prefetch_bucket_size"] = 5e7;
        zero["stage3_param_persistence_threshold"] = 1e5;
        zero["stage3_max_live_parameters"] = 1e9;
        zero["stage3_gather_16bit_weights_on_model_save"] = true;
    }
    config["zero_optimization"] = zero;
    config["steps_per_print"] = 100;
    config["wall_clock_breakdown"] = false;
    return config;
}

} // namespace oomlens::planner
