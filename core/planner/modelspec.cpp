#include "core/planner/modelspec.h"

#include <algorithm>
#include <cctype>

namespace oomlens::planner {

uint64_t ModelSpec::blockLinearParameters() const
{
    if (!hasDimensions())
        return 0;
    const uint64_t h = static_cast<uint64_t>(hidden);
    const uint64_t kv = static_cast<uint64_t>(kvDim());
    const uint64_t f = static_cast<uint64_t>(ffnOrDefault());
    const uint64_t attention = h * h + 2 * h * kv + h * h; // q, k, v, o
    const uint64_t mlp = (gatedMlp ? 3 : 2) * h * f;
    return static_cast<uint64_t>(layers) * (attention + mlp);
}

uint64_t ModelSpec::countedParameters() const
{
    if (!hasDimensions() || vocab <= 0)
        return 0;
    const uint64_t h = static_cast<uint64_t>(hidden);
    const uint64_t kv = static_cast<uint64_t>(kvDim());
    const uint64_t f = static_cast<uint64_t>(ffnOrDefault());
    const uint64_t v = static_cast<uint64_t>(vocab);
    uint64_t perLayerExtras = 0;
    if (layerNormBiases) {
        perLayerExtras += h + 2 * kv + h; // q/k/v/o biases
        perLayerExtras += gatedMlp ? 2 * f + h : f + h; // MLP biases
        perLayerExtras += 2 * 2 * h; // two LayerNorms, weight and bias
    } else {
        perLayerExtras += 2 * h; // two RMSNorm weights
    }
    const uint64_t embeddings = v * h + static_cast<uint64_t>(positions) * h;
    const uint64_t head = tiedEmbeddings ? 0 : v * h;
    const uint64_t finalNorm = layerNormBiases ? 2 * h : h;
    return blockLinearParameters() + static_cast<uint64_t>(layers) * perLayerExtras + embeddings + head + finalNorm;
}

uint64_t ModelSpec::largestLayerParameters() const
{
    if (largestLayer > 0)
        return largestLayer;
    if (!hasDimensions())
        return 0;
    const uint64_t h = static_cast<uint64_t>(hidden);
    const uint64_t widest = h * static_cast<uint64_t>(ffnOrDefault());
    return std::max(static_cast<uint64_t>(vocab) * h, widest);
}

uint64_t ModelSpec::loraParameters(int rank, LoraTargets targets) const
{
    if (!hasDimensions() || rank <= 0)
        return 0;
    const uint64_t r = static_cast<uint64_t>(rank);
    const uint64_t h = static_cast<uint64_t>(hidden);
    const uint64_t kv = static_cast<uint64_t>(kvDim());
    const uint64_t f = static_cast<uint64_t>(ffnOrDefault());
    // An adapter on an in x out projection adds A (in x r) and B (r x out).
    const uint64_t query = r * (h + h);
    const uint64_t value = r * (h + kv);
    const uint64_t attention = query + 2 * value + r * (h + h); // q, k, v, o
    const uint64_t mlp = (gatedMlp ? 3 : 2) * r * (h + f);
    uint64_t perBlock = attention + mlp;
    if (targets == LoraTargets::Attention)
        perBlock = attention;
    else if (targets == LoraTargets::QueryValue)
        perBlock = query + value;
    return static_cast<uint64_t>(layers) * perBlock;
}

namespace {

ModelSpec gpt2Like(std::string name, int layers, int hidden, int heads)
{
    ModelSpec model;
    model.name = std::move(name);
    model.layers = layers;
    model.hidden = hidden;
    model.heads = heads;
    model.vocab = 50257;
    model.positions = 1024;
    model.tiedEmbeddings = true;
    model.layerNormBiases = true;
    model.dropout = true; // attn_pdrop = resid_pdrop = 0.1
    return model;
}

ModelSpec llamaLike(std::string name, int layers, int hidden, int heads, int kvHeads, int ffn)
{
    ModelSpec model;
    model.name = std::move(name);
    model.layers = layers;
    model.hidden = hidden;
    model.heads = heads;
    model.kvHeads = kvHeads;
    model.vocab = 32000;
    model.ffn = ffn;
    model.gatedMlp = true;
    return model;
}

std::vector<ModelSpec> presets()
{
    return {
        gpt2Like("gpt2", 12, 768, 12),
        gpt2Like("gpt2-medium", 24, 1024, 16),
        gpt2Like("gpt2-large", 36, 1280, 20),
        gpt2Like("gpt2-xl", 48, 1600, 25),
        llamaLike("llama-2-7b", 32, 4096, 32, 32, 11008),
        llamaLike("llama-2-13b", 40, 5120, 40, 40, 13824),
        llamaLike("llama-2-70b", 80, 8192, 64, 8, 28672),
        llamaLike("llama-65b", 80, 8192, 64, 64, 22016),
        llamaLike("mistral-7b", 32, 4096, 32, 8, 14336),
    };
}

std::string lower(std::string_view text)
{
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

} // namespace

std::optional<ModelSpec> modelPreset(std::string_view name)
{
    const std::string wanted = lower(name);
    for (ModelSpec& model : presets()) {
        if (model.name == wanted)
            return model;
    }
    return std::nullopt;
}

std::vector<std::string> modelPresetNames()
{
    std::vector<std::string> names;
    for (const ModelSpec& model : presets())
        names.push_back(model.name);
    return names;
}

} // namespace oomlens::planner
