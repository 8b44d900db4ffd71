#include "core/serving/servingrun.h"

#include "core/nametable.h"

namespace oomlens {

namespace {

constexpr NameTable<ServingEngine, 6> engineNames { {
    { ServingEngine::Vllm, "vllm" },
    { ServingEngine::Sglang, "sglang" },
    { ServingEngine::Tgi, "tgi" },
    { ServingEngine::TensorRtLlm, "tensorrt_llm" },
    { ServingEngine::HfGenerate, "hf_generate" },
    { ServingEngine::Diffusers, "diffusers" },
} };

constexpr NameTable<ServingEngine, 6> engineLabels { {
    { ServingEngine::Vllm, "vLLM" },
    { ServingEngine::Sglang, "SGLang" },
    { ServingEngine::Tgi, "TGI" },
    { ServingEngine::TensorRtLlm, "TensorRT-LLM" },
    { ServingEngine::HfGenerate, "transformers generate()" },
    { ServingEngine::Diffusers, "diffusers" },
} };

constexpr NameTable<ServingFailure, 15> failureNames { {
    { ServingFailure::None, "none" },
    { ServingFailure::ContextExceedsCache, "context_exceeds_cache" },
    { ServingFailure::NoCacheBlocks, "no_cache_blocks" },
    { ServingFailure::StartupFreeMemory, "startup_free_memory" },
    { ServingFailure::SamplerWarmup, "sampler_warmup" },
    { ServingFailure::ProfileRun, "profile_run" },
    { ServingFailure::PrefillTokens, "prefill_tokens" },
    { ServingFailure::Warmup, "warmup" },
    { ServingFailure::GraphCapture, "graph_capture" },
    { ServingFailure::WeightLoad, "weight_load" },
    { ServingFailure::RuntimeBuffers, "runtime_buffers" },
    { ServingFailure::KvCacheAllocation, "kv_cache_allocation" },
    { ServingFailure::ServingStep, "serving_step" },
    { ServingFailure::Generate, "generate" },
    { ServingFailure::Pipeline, "pipeline" },
} };

constexpr NameTable<ServingFailure, 15> failureLabels { {
    { ServingFailure::None, "no failure shown" },
    { ServingFailure::ContextExceedsCache, "the check of the longest context against the KV cache" },
    { ServingFailure::NoCacheBlocks, "sizing the KV cache: nothing left for it" },
    { ServingFailure::StartupFreeMemory, "the start-up check of free memory" },
    { ServingFailure::SamplerWarmup, "the sampler's warm-up" },
    { ServingFailure::ProfileRun, "the memory profile run" },
    { ServingFailure::PrefillTokens, "the warm-up's prefill tokens" },
    { ServingFailure::Warmup, "the warm-up batch" },
    { ServingFailure::GraphCapture, "CUDA graph capture" },
    { ServingFailure::WeightLoad, "loading the weights" },
    { ServingFailure::RuntimeBuffers, "allocating the runtime's buffers" },
    { ServingFailure::KvCacheAllocation, "allocating the KV cache" },
    { ServingFailure::ServingStep, "a step while serving" },
    { ServingFailure::Generate, "generate()" },
    { ServingFailure::Pipeline, "the pipeline's call" },
} };

} // namespace

std::string_view servingFailureLabel(ServingFailure failure)
{
    return nameIn(failureLabels, failure);
}

std::string_view servingEngineName(ServingEngine engine)
{
    return nameIn(engineNames, engine);
}

std::string_view servingEngineLabel(ServingEngine engine)
{
    return nameIn(engineLabels, engine);
}

std::string_view servingFailureName(ServingFailure failure)
{
    return nameIn(failureNames, failure);
}

const ServingFigure* ServingRun::figure(std::string_view key) const
{
    for (auto it = figures.rbegin(); it != figures.rend(); ++it) {
        if (it->key == key)
            return &*it;
    }
    return nullptr;
}

const ServingSetting* ServingRun::setting(std::string_view key) const
{
    for (auto it = settings.rbegin(); it != settings.rend(); ++it) {
        if (it->key == key)
            return &*it;
    }
    return nullptr;
}

std::optional<double> ServingRun::settingValue(std::string_view key) const
{
    const ServingSetting* found = setting(key);
    return found ? std::optional<double>(found->value) : std::nullopt;
}

} // namespace oomlens
