#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What a log says about an inference run: which engine served (or generated), the budget it
// printed while it started, the settings it showed, and the failure in the engine's own words.
// Value types only; parsers/text/servinglog.cpp reads them, core/serving/ judges them.
namespace oomlens {

enum class ServingEngine : uint8_t {
    Vllm,
    Sglang,
    Tgi, // Hugging Face text-generation-inference
    TensorRtLlm,
    HfGenerate, // transformers' model.generate() and the pipelines built on it
    Diffusers,
};

// The JSON value: "vllm", "sglang", "tgi", "tensorrt_llm", "hf_generate", "diffusers".
std::string_view servingEngineName(ServingEngine engine);
// "vLLM", "SGLang", "TGI", "TensorRT-LLM", "transformers generate()", "diffusers".
std::string_view servingEngineLabel(ServingEngine engine);

// The engine's own failure, as its message or its frames name it.
enum class ServingFailure : uint8_t {
    None, // the text shows no failure of the engine's (an OOM message may still be there)
    ContextExceedsCache, // vLLM: the model's max seq len is larger than the tokens the KV cache holds
    NoCacheBlocks, // vLLM: no memory left for the cache blocks; SGLang: not enough memory for the pool
    StartupFreeMemory, // vLLM: free memory at start-up is less than gpu_memory_utilization asks
    SamplerWarmup, // vLLM V1: the sampler's warm-up with max_num_seqs dummy requests ran out
    ProfileRun, // vLLM: the profiling forward (max_num_batched_tokens, max_num_seqs) ran out
    PrefillTokens, // TGI: not enough memory for --max-batch-prefill-tokens
    Warmup, // TGI: the warm-up batch ran out of memory
    GraphCapture, // the engine ran out while capturing CUDA graphs
    WeightLoad, // the engine ran out while loading the weights
    RuntimeBuffers, // TensorRT-LLM: the runtime's buffers, sized when the engine was built
    KvCacheAllocation, // the KV cache's own allocation ran out
    ServingStep, // a forward while serving (after start-up): a batch the profile did not cover
    Generate, // inside generate(): the cache grows with every new token
    Pipeline, // a diffusers pipeline
};
// The JSON value: "context_exceeds_cache", "no_cache_blocks", ...; "none".
std::string_view servingFailureName(ServingFailure failure);
// In words: "the check of max_model_len against the KV cache", "the sampler's warm-up", ...
std::string_view servingFailureLabel(ServingFailure failure);

// One line of the input that said something, for evidence: "line 4: GPU KV cache size: 150,745 tokens".
struct ServingLine
{
    size_t line = 0; // 1-based
    std::string text; // trimmed, launcher prefixes kept out, at most a few hundred characters
    std::string cite() const { return "line " + std::to_string(line) + ": " + text; }
};

// One figure of the engine's memory budget, in bytes; negative where the engine printed a
// negative rest (vLLM's "the rest of the memory reserved for KV Cache is -1.05GiB").
struct ServingFigure
{
    std::string key; // "weights", "activation_peak", "non_torch", "graphs", "kv_cache", "budget", "card_total", ...
    int64_t bytes = 0;
    ServingLine source;
};

// A setting or a count the log printed: "max_model_len" 32768, "gpu_memory_utilization" 0.9,
// "kv_cache_tokens" 16816. Numbers as printed; `value` is the number read.
struct ServingSetting
{
    std::string key;
    double value = 0;
    ServingLine source;
};

struct ServingRun
{
    ServingEngine engine = ServingEngine::Vllm;
    ServingLine engineEvidence; // the line that named the engine
    std::string version; // "0.6.4.post1", "transformers 4.29.1"; empty when the text does not date it
    std::optional<ServingLine> versionEvidence;
    std::string generation; // vLLM's "V0" or "V1" engine, when its paths or prefixes show it
    std::vector<ServingFigure> figures; // the budget, in the order printed
    std::vector<ServingSetting> settings; // in the order printed; later lines override earlier ones
    ServingFailure failure = ServingFailure::None;
    std::optional<ServingLine> failureLine; // the engine's message, or the frame that placed the failure

    // The last figure or setting printed under `key`.
    const ServingFigure* figure(std::string_view key) const;
    const ServingSetting* setting(std::string_view key) const;
    std::optional<double> settingValue(std::string_view key) const;
};

} // namespace oomlens
