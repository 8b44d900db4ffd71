#include "core/analysis/enginecategories.h"

#include "core/analysis/stackfeatures.h"

namespace oomlens {

namespace {

const char* kvCacheReason(Engine engine)
{
    switch (engine) {
    case Engine::Vllm:
        return "vLLM's KV cache (cache engine / KV-cache initialisation): the engine's key/value blocks, sized from "
               "gpu_memory_utilization";
    case Engine::Sglang:
        return "SGLang's token-to-KV pool (mem_cache/memory_pool.py), sized from mem_fraction_static";
    case Engine::TensorRtLlm:
        return "TensorRT-LLM's KV cache manager, sized from free_gpu_memory_fraction";
    case Engine::HuggingFace:
        return "a Hugging Face key/value cache (cache_utils.py: StaticCache, OffloadedCache, ...), sized by batch "
               "and max_cache_len";
    case Engine::None:
        break;
    }
    return "a key/value cache (its allocation is named for one)";
}

const char* engineWeightsReason(Engine engine)
{
    switch (engine) {
    case Engine::Vllm:
        return "the rollout engine's copy of the weights (vLLM's model loader), not the trainer's";
    case Engine::Sglang:
        return "the rollout engine's copy of the weights (SGLang's model loader), not the trainer's";
    case Engine::TensorRtLlm:
        return "the inference engine's copy of the weights (TensorRT-LLM), not the trainer's";
    case Engine::HuggingFace:
    case Engine::None:
        break;
    }
    return "an inference engine's copy of the weights, not the trainer's";
}

} // namespace

std::optional<CategoryVerdict> engineVerdict(
    uint32_t features, Engine engine, Phase born, bool keptBeyondRun, bool inGraphCapture)
{
    if (features & FeatureKvCache)
        return CategoryVerdict { Category::KvCache, kvCacheReason(engine) };
    // The engine captures its decode graphs while it starts (SGLang's CudaGraphRunner, vLLM's
    // capture_model): the forward it records allocates into the graph's pool, which keeps those
    // buffers for every replay. They are the captured batch's activations, not weights, although
    // the constructor around them reads as loading.
    if ((features & FeatureEngine) && inGraphCapture && born == Phase::Load && keptBeyondRun)
        return CategoryVerdict { Category::Activations,
            "kept by a CUDA graph the engine captured while starting (cuda_graph_runner, capture_model): the "
            "captured batch's intermediates and outputs, held in the graph's pool for every replay" };
    if ((features & FeatureEngine) && (features & FeatureLoad) && born == Phase::Load && keptBeyondRun)
        return CategoryVerdict { Category::Parameters, engineWeightsReason(engine) };
    return std::nullopt;
}

uint64_t engineWeightsLiveAfter(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event)
{
    if (!snapshot.frames)
        return 0;
    StackFeatures features(snapshot);
    uint64_t total = 0;
    for (const Allocation& a : device.allocations) {
        if (a.category == Category::Parameters && a.liveAfter(event) && a.stack != FrameTable::emptyStack()
            && (features.features(a.stack) & FeatureEngine))
            total += a.blockSize;
    }
    return total;
}

CategoryVerdict iterationVerdict(Phase born, uint32_t features, bool sameRun, bool caughtByFailure)
{
    switch (born) {
    case Phase::Rollout:
        if (sameRun)
            return { Category::Temporaries, "rollout scratch (the engine's forward and sampling), freed within it" };
        // Generation saves nothing for a backward and keeps only its KV cache (its own band) and the
        // tokens: what a failing decode or prefill step still holds is that step's scratch, live
        // only because the step did not finish.
        if (caughtByFailure)
            return { Category::Temporaries,
                "made by the engine's forward in the step that failed (prefill or decode logits and intermediates), "
                "live only because that step did not finish" };
        return { Category::Inputs,
            "generated during rollout and kept for the update (responses, log-probs: the update's batch)" };
    case Phase::Reference:
    case Phase::Reward:
        if (sameRun)
            return { Category::Temporaries, "scratch of a reference or reward pass, freed within it" };
        if (caughtByFailure)
            return { Category::Activations, "made by a reference or reward forward pass, live when it failed" };
        return { Category::Inputs, "reference log-probs or rewards kept for the update" };
    case Phase::WeightSync:
        if (sameRun)
            return { Category::Temporaries, "gathered or converted for the weight sync and freed within it" };
        return { Category::Communication,
            "a weight-sync buffer (gathered weights on their way to the engine), kept beyond the sync or live at the "
            "failure" };
    case Phase::Reload:
        if (sameRun)
            return { Category::Temporaries, "staging of a reload, freed within it" };
        if (features & FeatureMovesOptimizerState)
            return { Category::OptimizerState, "the trainer's optimizer state reloaded to the GPU after rollout" };
        if (features & FeatureMovesGradients)
            return { Category::Gradients, "the trainer's gradient buffers reloaded to the GPU" };
        return { Category::Parameters, "the trainer's parameters reloaded to the GPU after rollout" };
    case Phase::Offload:
        if (sameRun)
            return { Category::Temporaries, "staging of an offload to the host, freed within it" };
        return { Category::Unknown, "allocated while offloading to the host and kept; the stack does not say what" };
    case Phase::Sleep:
    case Phase::Wake:
        if (sameRun)
            return { Category::Temporaries, "scratch of a sleep or wake-up, freed within it" };
        return { Category::Unknown,
            "allocated while pooled memory was released or mapped again; the stack does not say what" };
    case Phase::Unknown:
    case Phase::Load:
    case Phase::Forward:
    case Phase::Backward:
    case Phase::Optimizer:
    case Phase::Eval:
    case Phase::Data:
        break;
    }
    return { Category::Unknown, "no phase evidence in its stack" };
}

} // namespace oomlens
