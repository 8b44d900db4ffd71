#include "core/planner/kvcache.h"

#include "core/nametable.h"

#include <algorithm>

namespace oomlens::planner {

namespace {

constexpr NameTable<KvDtype, 4> dtypeNames { { { KvDtype::Fp16, "fp16" }, { KvDtype::Bf16, "bf16" },
    { KvDtype::Fp8, "fp8" }, { KvDtype::Fp32, "fp32" } } };

} // namespace

std::string_view kvDtypeName(KvDtype dtype)
{
    return nameIn(dtypeNames, dtype);
}

std::optional<KvDtype> kvDtypeFromName(std::string_view name)
{
    if (const auto dtype = valueNamed(dtypeNames, name))
        return dtype;
    // vLLM's --kv-cache-dtype and Hugging Face's torch_dtype spellings.
    if (name == "float16" || name == "half")
        return KvDtype::Fp16;
    if (name == "bfloat16")
        return KvDtype::Bf16;
    if (name == "fp8_e4m3" || name == "fp8_e5m2")
        return KvDtype::Fp8;
    if (name == "float32" || name == "float")
        return KvDtype::Fp32;
    return std::nullopt;
}

int kvDtypeBytes(KvDtype dtype)
{
    switch (dtype) {
    case KvDtype::Fp8:
        return 1;
    case KvDtype::Fp32:
        return 4;
    case KvDtype::Fp16:
    case KvDtype::Bf16:
        break;
    }
    return 2;
}

int KvCacheShape::kvHeadsPerGpu() const
{
    const int tp = std::max(tensorParallel, 1);
    // Heads that do not divide evenly: the busiest rank holds the rounded-up share.
    return std::max(1, (kvHeads + tp - 1) / tp);
}

uint64_t kvBytesPerToken(const KvCacheShape& shape)
{
    if (!shape.valid())
        return 0;
    const uint64_t layers = static_cast<uint64_t>(shape.layers);
    const uint64_t element = static_cast<uint64_t>(shape.elementBytes);
    if (shape.latentDim > 0)
        return layers * static_cast<uint64_t>(shape.latentDim) * element;
    return 2 * layers * static_cast<uint64_t>(shape.kvHeadsPerGpu()) * static_cast<uint64_t>(shape.headDim) * element;
}

uint64_t kvCacheBytes(const KvCacheShape& shape, uint64_t sequences, uint64_t tokens)
{
    return kvBytesPerToken(shape) * sequences * tokens;
}

uint64_t kvTokensThatFit(const KvCacheShape& shape, uint64_t bytes)
{
    const uint64_t perToken = kvBytesPerToken(shape);
    return perToken > 0 ? bytes / perToken : 0;
}

uint64_t kvSequencesThatFit(const KvCacheShape& shape, uint64_t bytes, uint64_t tokens)
{
    return tokens > 0 ? kvTokensThatFit(shape, bytes) / tokens : 0;
}

uint64_t kvContextThatFits(const KvCacheShape& shape, uint64_t bytes, uint64_t sequences)
{
    return sequences > 0 ? kvTokensThatFit(shape, bytes) / sequences : 0;
}

} // namespace oomlens::planner
