#include "core/analysis/enginemarkers.h"

#include "core/analysis/stackfeatures.h"
#include "core/strings.h"

#include <algorithm>
#include <array>

namespace oomlens {

namespace {

// A package as a whole path component: verl's workers/rollout/vllm_rollout/ is not vLLM's code.
bool inPackage(std::string_view filename, std::string_view package)
{
    const std::string slashed = "/" + std::string(package) + "/";
    return contains(filename, slashed) || filename.starts_with(slashed.substr(1));
}

Engine engineOf(std::string_view file)
{
    if (inPackage(file, "vllm"))
        return Engine::Vllm;
    if (inPackage(file, "sglang"))
        return Engine::Sglang;
    if (inPackage(file, "tensorrt_llm"))
        return Engine::TensorRtLlm;
    return Engine::None;
}

bool isKvCacheAllocation(std::string_view name, std::string_view file, Engine engine)
{
    switch (engine) {
    case Engine::Vllm:
        // v0: CacheEngine._allocate_kv_cache; v1: GPUModelRunner.initialize_kv_cache_tensors /
        // _allocate_kv_cache_tensors. Not _initialize_kv_caches: it also runs the profiling forward.
        return name == "_allocate_kv_cache" || name == "_allocate_kv_cache_tensors"
            || name == "initialize_kv_cache_tensors" || name == "allocate_kv_cache"
            || file.ends_with("cache_engine.py");
    case Engine::Sglang:
        // MHATokenToKVPool, MLATokenToKVPool, DoubleSparseTokenToKVPool and the request-to-token table.
        return contains(file, "mem_cache/memory_pool");
    case Engine::TensorRtLlm:
        return contains(file, "kv_cache_manager") || contains(name, "KVCacheManager") || name == "allocate_kv_cache";
    case Engine::HuggingFace:
    case Engine::None:
        break;
    }
    return false;
}

bool isEngineLoad(std::string_view name)
{
    static constexpr std::array<std::string_view, 7> names = { "load_model", "load_weights", "create_weights",
        "_initialize_model", "initialize_model", "weight_loader", "_load_weights" };
    return std::find(names.begin(), names.end(), name) != names.end();
}

// The stage of an RL iteration a frame's function stands for (0: none).
uint32_t iterationMarker(std::string_view name, std::string_view file)
{
    if (name == "wake_up" || name == "resume_memory_occupation"
        || (contains(file, "torch_memory_saver") && name == "resume"))
        return FeatureWake;
    if (name == "release_memory_occupation" || (contains(file, "torch_memory_saver") && name == "pause")
        || (name == "sleep" && engineOf(file) != Engine::None)
        || (contains(file, "sharding_manager") && name == "__exit__"))
        return FeatureSleep;
    if (name.starts_with("offload_"))
        return FeatureOffload;
    if (name.starts_with("load_fsdp_") || name.starts_with("load_megatron_") || name.ends_with("_to_gpu")
        || name.starts_with("onload") || name.starts_with("reload_"))
        return FeatureReload;
    if (contains(name, "update_weights") || contains(name, "update_weight_") || contains(name, "sync_weights")
        || contains(name, "sync_model_weights") || name == "_broadcast_to_vllm" || name == "_move_model_to_vllm"
        || name == "_sync_fsdp_params_to_vllm"
        || (contains(file, "sharding_manager") && (name == "__enter__" || name == "update_params")))
        return FeatureWeightSync;
    // OpenRLHF's experience maker scores the samples generate_samples made, all under @torch.no_grad():
    // the actor's old log-probs, the reference model's (initial_model), the critic's values and the
    // reward model's scores: forward-only passes of the trainer's side that create no gradients and
    // no optimizer state. make_experience, and make_experience_batch in the releases that score a
    // whole rollout at once; not make_experience_list, which also calls generate_samples (the
    // rollout), nor the replay buffer's make_experience_batch (CPU items into a batch). Its
    // Actor.generate (older releases generate inside make_experience) stays the rollout: the
    // innermost marker decides.
    const bool openRlhfScoring = (name == "make_experience" || name == "make_experience_batch")
        && inPackage(file, "openrlhf") && contains(file, "experience_maker");
    if (contains(name, "ref_log_prob") || openRlhfScoring)
        return FeatureReference;
    if (contains(name, "compute_rm_score") || name == "compute_reward" || name == "compute_rewards")
        return FeatureReward;
    if (contains(name, "generate_sequences") || name == "_generate_and_score_completions" || name == "generate_samples"
        || name.starts_with("generate_rollout") || (name == "generate" && inPackage(file, "openrlhf")))
        return FeatureRollout;
    return 0;
}

} // namespace

std::string_view engineLabel(Engine engine)
{
    switch (engine) {
    case Engine::Vllm:
        return "vLLM";
    case Engine::Sglang:
        return "SGLang";
    case Engine::TensorRtLlm:
        return "TensorRT-LLM";
    case Engine::HuggingFace:
        return "Hugging Face";
    case Engine::None:
        break;
    }
    return {};
}

std::string_view engineName(Engine engine)
{
    switch (engine) {
    case Engine::Vllm:
        return "vllm";
    case Engine::Sglang:
        return "sglang";
    case Engine::TensorRtLlm:
        return "tensorrt_llm";
    case Engine::HuggingFace:
        return "huggingface";
    case Engine::None:
        break;
    }
    return {};
}

EngineFrame engineFrame(std::string_view name, std::string_view filename)
{
    EngineFrame result;
    result.engine = engineOf(filename);
    if (result.engine != Engine::None) {
        result.features |= FeatureEngine;
        if (isEngineLoad(name))
            result.features |= FeatureLoad;
    } else if (filename.ends_with("transformers/cache_utils.py")) {
        // Hugging Face's caches are a model's, not an engine's: no FeatureEngine, so a generate()
        // stays an evaluation unless an RL marker says rollout.
        result.engine = Engine::HuggingFace;
        result.features |= FeatureKvCache;
    }
    if (isKvCacheAllocation(name, filename, result.engine))
        result.features |= FeatureKvCache;
    const uint32_t marker = iterationMarker(name, filename);
    result.features |= marker;
    if (marker & (FeatureOffload | FeatureReload)) {
        if (contains(name, "optimizer"))
            result.features |= FeatureMovesOptimizerState;
        else if (contains(name, "grad"))
            result.features |= FeatureMovesGradients;
    }
    return result;
}

} // namespace oomlens
