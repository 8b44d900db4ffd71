#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlens {

// Every fix oomlens can recommend. The ladder rungs (product.md §3) come first in ladder order;
// the case-specific ones remove a cause and are listed before the ladder by the diagnoses.
enum class FixKind : uint8_t {
    MicroBatch,
    Bf16,
    Checkpointing,
    ExpandableSegments,
    MaxSplitSize,
    Sdpa,
    ShorterSequences,
    Optimizer8bit,
    Zero,
    Offload,
    Lora,
    StopOtherProcess,
    ChooseGpu,
    MemoryFraction,
    MpsWatermark,
    EvalAccumulation,
    EvalBatchSize,
    ReleaseReferences,
    OptimizerForeach,
    LengthBucketing,
    LoadToCpu,
    // Host RAM, not the card (hostmemoryfixes.cpp): never offered for a VRAM OOM.
    HostFewerWorkers,
    HostSharedDataset,
    HostPinMemory,
    HostLazyCheckpoint,
    HostMemoryLimit,
    HostSharedMemory,
    // What distributed training and CUDA graphs add (distributedfixes.cpp).
    AvoidRecordStreams,
    Fsdp2,
    SynchronizeBeforeReuse,
    ReshardAfterForward,
    FewerAllGathersInFlight,
    BucketSizes,
    GradientAsBucketView,
    SyncGradientsEachMicroBatch,
    ShareGraphPool,
    FewerGraphShapes,
    EagerFallback,
    ReleaseBeforeCapture,
    OffloadCheckpointedInputs,
    // Fixes one diagnosis offers on its own: a tensor beyond the backend's per-block limit, and
    // an inference engine colocated with the trainer (snapshotcolocated.cpp).
    SplitTensor,
    OffloadTrainerDuringRollout,
    EngineMemoryFraction,
    EngineMaxNumSeqs,
    FreeEngineCacheBeforeUpdate,
    BucketedWeightSync,
    MoreRolloutGpus,
    // An inference engine's own knobs (core/serving/servingfixes.cpp), in its own syntax. Fewer
    // sequences reuse EngineMaxNumSeqs, the memory share EngineMemoryFraction, eager mode EagerFallback.
    EngineBatchedTokens,
    EngineContextLength,
    EngineKvCacheDtype,
    EngineQuantizedWeights,
    EngineTensorParallel,
    EngineCpuOffload,
    GenerateFewerTokens,
    GenerateCache,
    DiffusersCpuOffload,
    DiffusersVaeTiling,
    DiffusersAttentionSlicing,
    DiffusersResolution,
    // A run whose input shows neither training nor inference (core/serving/servingfixes.cpp): fewer
    // samples per forward, said so that it holds for both.
    SmallerBatch,
};

// The fix's id in the JSON and the plan's ladder ("micro_batch", "eval_accumulation_steps").
std::string_view fixId(FixKind kind);
std::optional<FixKind> fixKindFromId(std::string_view id);

} // namespace oomlens
