#include "core/serving/servingknobs.h"

#include <array>
#include <cctype>
#include <string_view>

namespace oomlens {

namespace {

// One knob of one engine: the launcher's flag ("" when the engine has none) and the Python
// argument ("" when the engine has no Python call for it). A flag without a value takes none.
struct KnobSpelling
{
    ServingKnob knob;
    std::string_view flag;
    std::string_view argument;
    bool takesValue = true;
};

constexpr std::array<KnobSpelling, 10> vllmKnobs { {
    { ServingKnob::MaxSequences, "--max-num-seqs", "max_num_seqs" },
    { ServingKnob::BatchedTokens, "--max-num-batched-tokens", "max_num_batched_tokens" },
    { ServingKnob::ContextLength, "--max-model-len", "max_model_len" },
    { ServingKnob::MemoryShare, "--gpu-memory-utilization", "gpu_memory_utilization" },
    { ServingKnob::Eager, "--enforce-eager", "enforce_eager", false },
    { ServingKnob::CaptureSizes, "--cuda-graph-sizes", "cuda_graph_sizes" },
    { ServingKnob::KvCacheFp8, "--kv-cache-dtype", "kv_cache_dtype" },
    { ServingKnob::QuantizedWeights, "--quantization", "quantization" },
    { ServingKnob::TensorParallel, "--tensor-parallel-size", "tensor_parallel_size" },
    { ServingKnob::CpuOffload, "--cpu-offload-gb", "cpu_offload_gb" },
} };

constexpr std::array<KnobSpelling, 10> sglangKnobs { {
    { ServingKnob::MaxSequences, "--max-running-requests", "max_running_requests" },
    { ServingKnob::BatchedTokens, "--chunked-prefill-size", "chunked_prefill_size" },
    { ServingKnob::ContextLength, "--context-length", "context_length" },
    { ServingKnob::MemoryShare, "--mem-fraction-static", "mem_fraction_static" },
    { ServingKnob::Eager, "--disable-cuda-graph", "disable_cuda_graph", false },
    { ServingKnob::CaptureSizes, "--cuda-graph-max-bs", "cuda_graph_max_bs" },
    { ServingKnob::KvCacheFp8, "--kv-cache-dtype", "kv_cache_dtype" },
    { ServingKnob::QuantizedWeights, "--quantization", "quantization" },
    { ServingKnob::TensorParallel, "--tp", "tp_size" },
    { ServingKnob::CpuOffload, "--cpu-offload-gb", "cpu_offload_gb" },
} };

constexpr std::array<KnobSpelling, 10> tgiKnobs { {
    { ServingKnob::MaxSequences, "--max-batch-size", "" },
    { ServingKnob::BatchedTokens, "--max-batch-prefill-tokens", "" },
    { ServingKnob::ContextLength, "--max-total-tokens", "" },
    { ServingKnob::MemoryShare, "--cuda-memory-fraction", "" },
    { ServingKnob::Eager, "--cuda-graphs", "", true },
    { ServingKnob::CaptureSizes, "--cuda-graphs", "" },
    { ServingKnob::KvCacheFp8, "--kv-cache-dtype", "" },
    { ServingKnob::QuantizedWeights, "--quantize", "" },
    { ServingKnob::TensorParallel, "--num-shard", "" },
    { ServingKnob::CpuOffload, "", "" },
} };

// TensorRT-LLM sizes its runtime when it builds the engine (trtllm-build) and its KV cache when
// the runtime starts (KvCacheConfig).
constexpr std::array<KnobSpelling, 10> tensorRtKnobs { {
    { ServingKnob::MaxSequences, "--max_batch_size", "" },
    { ServingKnob::BatchedTokens, "--max_num_tokens", "" },
    { ServingKnob::ContextLength, "--max_seq_len", "" },
    { ServingKnob::MemoryShare, "", "free_gpu_memory_fraction" },
    { ServingKnob::Eager, "", "" },
    { ServingKnob::CaptureSizes, "", "" },
    { ServingKnob::KvCacheFp8, "--kv_cache_dtype", "" },
    { ServingKnob::QuantizedWeights, "--qformat", "" },
    { ServingKnob::TensorParallel, "--tp_size", "" },
    { ServingKnob::CpuOffload, "", "" },
} };

const KnobSpelling* spelling(ServingEngine engine, ServingKnob knob)
{
    const auto find = [&](const auto& table) -> const KnobSpelling* {
        for (const KnobSpelling& entry : table) {
            if (entry.knob == knob)
                return &entry;
        }
        return nullptr;
    };
    switch (engine) {
    case ServingEngine::Vllm:
        return find(vllmKnobs);
    case ServingEngine::Sglang:
        return find(sglangKnobs);
    case ServingEngine::Tgi:
        return find(tgiKnobs);
    case ServingEngine::TensorRtLlm:
        return find(tensorRtKnobs);
    case ServingEngine::HfGenerate:
    case ServingEngine::Diffusers:
        break;
    }
    return nullptr;
}

// Python's spelling of a value: strings quoted, flags' bare switches True.
std::string pythonValue(const KnobSpelling& entry, const std::string& value)
{
    if (!entry.takesValue)
        return "True";
    const bool number
        = !value.empty() && (std::isdigit(static_cast<unsigned char>(value.front())) || value.front() == '[');
    return number ? value : "\"" + value + "\"";
}

} // namespace

std::optional<std::string> knobSnippet(ServingEngine engine, ServingKnob knob, const std::string& value)
{
    const KnobSpelling* entry = spelling(engine, knob);
    if (!entry || (entry->flag.empty() && entry->argument.empty()))
        return std::nullopt;
    const std::string flag
        = entry->flag.empty() ? std::string() : std::string(entry->flag) + (entry->takesValue ? " " + value : "");
    switch (engine) {
    case ServingEngine::Vllm:
        return "vllm serve MODEL " + flag + "\n# or in Python: LLM(model=MODEL, " + std::string(entry->argument) + "="
            + pythonValue(*entry, value) + ")";
    case ServingEngine::Sglang:
        return "python -m sglang.launch_server --model-path MODEL " + flag
            + "\n# or in Python: sglang.Engine(model_path=MODEL, " + std::string(entry->argument) + "="
            + pythonValue(*entry, value) + ")";
    case ServingEngine::Tgi:
        return "text-generation-launcher --model-id MODEL " + flag;
    case ServingEngine::TensorRtLlm:
        if (entry->flag.empty())
            return "KvCacheConfig(" + std::string(entry->argument) + "=" + value + ")";
        if (knob == ServingKnob::KvCacheFp8 || knob == ServingKnob::QuantizedWeights)
            return "python quantize.py --model_dir MODEL " + flag
                + " --output_dir CKPT\ntrtllm-build --checkpoint_dir CKPT";
        return "trtllm-build --checkpoint_dir CKPT " + flag;
    case ServingEngine::HfGenerate:
    case ServingEngine::Diffusers:
        break;
    }
    return std::nullopt;
}

std::string knobName(ServingEngine engine, ServingKnob knob)
{
    const KnobSpelling* entry = spelling(engine, knob);
    if (!entry)
        return {};
    return std::string(entry->flag.empty() ? entry->argument : entry->flag);
}

} // namespace oomlens
