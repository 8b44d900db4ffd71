#pragma once

#include "core/planner/kvcache.h"
#include "core/planner/memoryplan.h"

#include <string>

namespace oomlens::planner {

// Serving (--inference): the weights at the serving format on one GPU (split by TP, by PP into
// stages, experts by EP; int8/int4/fp8 quantize the blocks' linear weights, the embeddings and
// the head stay 16-bit as GPTQ/AWQ keep them), the KV cache of the set-up's sequences
// (kvcache.h), and the forward's workspace. vLLM profiles one forward of
// max_num_batched_tokens (8192 by default with chunked prefill) and keeps its peak: counted as the
// widest tensors of one block for that many tokens (its residual stream, QKV, attention output
// and MLP inner tensors, top-k routed copies for MoE) plus the sampler's fp32 logits, one row per
// sequence. Overhead is the CUDA context alone: the KV cache is one preallocated tensor, no
// allocator slack to speak of.
//
// Not modelled: CUDA graphs' private pools (vLLM captures them after sizing the cache, a few
// hundred MiB), speculative decoding's draft model, LoRA adapters, prefix caching's sharing,
// sliding-window layers, the vision tower of multimodal models.
MemoryPlan planServing(const ModelSpec& model, const TrainingSetup& setup);

constexpr int vllmMaxBatchedTokens = 8192;

// The KV cache's shape on one GPU of the busiest stage.
KvCacheShape servingKvShape(const ModelSpec& model, const TrainingSetup& setup);

// What vLLM makes of a card: it reserves gpu_memory_utilization of it, and what the weights,
// the workspace and the CUDA context leave is the KV cache.
struct ServingFit
{
    double gpuMemoryUtilization = 0.9;
    uint64_t budgetBytes = 0; // capacity x gpu_memory_utilization
    uint64_t kvBudgetBytes = 0; // what is left for the KV cache (0 when the rest does not fit)
    uint64_t kvTokens = 0; // tokens of KV cache that fit: vLLM's "GPU KV cache size: N tokens"
    uint64_t maxSequences = 0; // concurrent sequences of the set-up's length
    uint64_t maxContext = 0; // tokens per sequence at the set-up's batch
    double neededUtilization = 0; // the gpu_memory_utilization the set-up's batch x seq needs
    bool fits = false; // the set-up's sequences fit within the budget
};
ServingFit fitServing(const MemoryPlan& plan, const TrainingSetup& setup, uint64_t capacityBytes);

// The set-up as a `vllm serve` command line: parallel sizes, the KV cache's dtype, the
// quantization, gpu_memory_utilization, the context and the concurrent sequences.
std::string vllmCommand(const ModelSpec& model, const TrainingSetup& setup);

} // namespace oomlens::planner
