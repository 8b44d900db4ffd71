#pragma once

#include "core/serving/servingrun.h"

#include <optional>
#include <string>

namespace oomlens {

// The knobs every serving engine has under its own name: what a rung of the inference ladder
// turns. Each engine spells them in its launcher's flags and its Python arguments.
enum class ServingKnob : uint8_t {
    MaxSequences, // vLLM max_num_seqs, SGLang --max-running-requests, TGI --max-batch-size, TRT-LLM max_batch_size
    BatchedTokens, // vLLM max_num_batched_tokens, SGLang --chunked-prefill-size, TGI --max-batch-prefill-tokens
    ContextLength, // vLLM max_model_len, SGLang --context-length, TGI --max-total-tokens, TRT-LLM max_seq_len
    MemoryShare, // vLLM gpu_memory_utilization, SGLang --mem-fraction-static, TGI --cuda-memory-fraction
    Eager, // no CUDA graphs
    CaptureSizes, // fewer CUDA graph batch sizes
    KvCacheFp8,
    QuantizedWeights,
    TensorParallel,
    CpuOffload, // GiB of weights kept in host memory
};

// The knob set to `value` in the engine's syntax: a launcher line and, where the engine has one,
// its Python call ("vllm serve MODEL --max-num-seqs 128\nLLM(model=MODEL, max_num_seqs=128)").
// Nothing when the engine has no such knob (TGI offloads no weights, TensorRT-LLM fixes its
// graphs when it builds the engine).
std::optional<std::string> knobSnippet(ServingEngine engine, ServingKnob knob, const std::string& value);

// The knob's name as the engine's flags spell it ("--max-num-seqs"), for sentences.
std::string knobName(ServingEngine engine, ServingKnob knob);

} // namespace oomlens
