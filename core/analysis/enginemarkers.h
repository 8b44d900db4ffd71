#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace oomlens {

// Inference engines and the reinforcement-learning frameworks that drive them, as their frames
// show them (product.md §3, issue 24). One frame is read once (StackFeatures caches it); a stack's
// engine is its innermost engine frame's.
enum class Engine : uint8_t { None, Vllm, Sglang, TensorRtLlm, HuggingFace };

// "vLLM", "SGLang", "TensorRT-LLM", "Hugging Face"; empty for None.
std::string_view engineLabel(Engine engine);
// "vllm", "sglang", "tensorrt_llm", "huggingface"; empty for None (JSON values).
std::string_view engineName(Engine engine);

// What a frame says about an engine or an RL iteration. The bits live in StackFeatures' mask
// (stackfeatures.h declares them beside the training markers).
struct EngineFrame
{
    uint32_t features = 0;
    Engine engine = Engine::None;
};

// Markers, by name and package-relative file:
//   engine code:  vllm/, sglang/, tensorrt_llm/ (any frame);
//   KV cache:     vLLM cache_engine._allocate_kv_cache, gpu_model_runner.initialize_kv_cache /
//                 _allocate_kv_cache_tensors, any vLLM or TensorRT-LLM frame named for a KV cache;
//                 SGLang mem_cache/memory_pool.py (MHA/MLA token-to-KV pools); Hugging Face
//                 cache_utils.py (StaticCache, OffloadedCache and the others);
//   RL stages:    rollout (verl generate_sequences, TRL _generate_and_score_completions, OpenRLHF
//                 generate_samples and Actor.generate, slime generate_rollout), reference
//                 (…ref_log_prob; OpenRLHF make_experience, its forward-only scoring passes), reward
//                 (compute_rm_score, compute_reward(s)), weight sync (update_weights*, sync_weights,
//                 verl's sharding manager __enter__, OpenRLHF _broadcast_to_vllm, TRL
//                 _move_model_to_vllm), sleep/wake (vLLM sleep / wake_up, SGLang
//                 release/resume_memory_occupation, torch_memory_saver pause/resume), offload/reload
//                 (verl offload_* / load_*_to_gpu, load_fsdp_* / load_megatron_*, onload/reload).
EngineFrame engineFrame(std::string_view name, std::string_view filename);

} // namespace oomlens
