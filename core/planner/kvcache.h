#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlens::planner {

// The key/value cache of a decoder-only transformer while it serves: every layer keeps one key
// and one value vector per KV head for every token of every live sequence. Standalone on
// purpose (no TrainingSetup, no ModelSpec): the serving planner and the colocated-engine model
// (a vLLM/SGLang engine beside a trainer) both size the cache with it.
//
// Not modelled: sliding-window layers (Mistral, Gemma 2 keep only the window), paged blocks'
// rounding of each sequence up to the block size (vLLM's 16 tokens: under one block per
// sequence), prefix sharing, and quantization scales of fp8 caches (one per tensor).

// The cache's element type: fp16 and bf16 are 2 bytes, fp8 (e4m3/e5m2) 1, fp32 4.
enum class KvDtype { Fp16, Bf16, Fp8, Fp32 };

std::string_view kvDtypeName(KvDtype dtype); // "fp16", "bf16", "fp8", "fp32"
std::optional<KvDtype> kvDtypeFromName(std::string_view name); // also "float16", "bfloat16", "fp8_e4m3"
int kvDtypeBytes(KvDtype dtype);

// What sizes one token's cache on one GPU.
struct KvCacheShape
{
    int layers = 0; // layers this GPU holds (a pipeline stage's share, or all of them)
    int kvHeads = 0; // key/value heads of the whole model (heads without grouped-query attention)
    int headDim = 0;
    int elementBytes = 2; // kvDtypeBytes()
    int tensorParallel = 1; // KV heads split over this many GPUs
    // Multi-head latent attention (DeepSeek-V2/V3): each layer caches one compressed vector of
    // kv_lora_rank + qk_rope_head_dim per token instead of K and V per head; it is not split by
    // tensor parallelism (every rank keeps it whole). 0: ordinary K and V.
    int latentDim = 0;

    // KV heads on one GPU: split by TP, but never below one (vLLM replicates the heads when TP
    // exceeds them: max(1, kv_heads / tp)).
    int kvHeadsPerGpu() const;
    bool valid() const { return layers > 0 && elementBytes > 0 && (latentDim > 0 || (kvHeads > 0 && headDim > 0)); }
};

// Bytes of one token on one GPU: 2 x layers x kv_heads_per_gpu x head_dim x element bytes
// (latent: layers x latent_dim x element bytes). 0 for an invalid shape.
uint64_t kvBytesPerToken(const KvCacheShape& shape);
// The cache of `sequences` concurrent sequences of `tokens` tokens each.
uint64_t kvCacheBytes(const KvCacheShape& shape, uint64_t sequences, uint64_t tokens);
// Tokens (over all sequences) whose cache fits in `bytes`; 0 for an invalid shape.
uint64_t kvTokensThatFit(const KvCacheShape& shape, uint64_t bytes);
// Sequences of `tokens` tokens each that fit in `bytes` (0 when `tokens` is 0).
uint64_t kvSequencesThatFit(const KvCacheShape& shape, uint64_t bytes, uint64_t tokens);
// The longest context each of `sequences` sequences can have within `bytes` (0 when `sequences` is 0).
uint64_t kvContextThatFits(const KvCacheShape& shape, uint64_t bytes, uint64_t sequences);

} // namespace oomlens::planner
