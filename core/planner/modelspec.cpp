#include "core/planner/modelspec.h"
#include "core/strings.h"

#include <algorithm>
#include <cctype>

namespace oomlens::planner {

uint64_t ModelSpec::attentionParameters() const
{
    if (!hasDimensions())
        return 0;
    const uint64_t h = static_cast<uint64_t>(hidden);
    if (latentAttention()) {
        // DeepSeek's MLA: Q through a rank-q_lora_rank bottleneck (with its norm) or straight,
        // K/V down to the kv_lora_rank latent plus the shared rotary key, up again per head, and
        // the output projection from heads x v_head_dim.
        const uint64_t a = static_cast<uint64_t>(heads);
        const uint64_t qk = static_cast<uint64_t>(qkNopeHeadDim + qkRopeHeadDim);
        const uint64_t qLora = static_cast<uint64_t>(qLoraRank);
        const uint64_t kvLora = static_cast<uint64_t>(kvLoraRank);
        const uint64_t query = qLora > 0 ? h * qLora + qLora + qLora * a * qk : h * a * qk;
        const uint64_t keyValue = h * (kvLora + static_cast<uint64_t>(qkRopeHeadDim)) + kvLora
            + kvLora * a * static_cast<uint64_t>(qkNopeHeadDim + vHeadDim);
        return query + keyValue + a * static_cast<uint64_t>(vHeadDim) * h;
    }
    const uint64_t kv = static_cast<uint64_t>(kvDim());
    return h * h + 2 * h * kv + h * h; // q, k, v, o
}

namespace {

uint64_t mlpParameters(uint64_t hidden, uint64_t inner, bool gated)
{
    return (gated ? 3 : 2) * hidden * inner;
}

} // namespace

uint64_t ModelSpec::denseMlpParameters() const
{
    return hasDimensions() ? mlpParameters(hidden, ffnOrDefault(), gatedMlp) : 0;
}

uint64_t ModelSpec::routedExpertParameters() const
{
    if (!hasDimensions() || !moe())
        return 0;
    return static_cast<uint64_t>(experts) * mlpParameters(hidden, expertFfnOrDefault(), gatedMlp);
}

uint64_t ModelSpec::sharedMoeParameters() const
{
    if (!hasDimensions() || !moe())
        return 0;
    const uint64_t shared
        = static_cast<uint64_t>(sharedExperts) * mlpParameters(hidden, sharedExpertFfnOrDefault(), gatedMlp);
    return shared + static_cast<uint64_t>(hidden) * static_cast<uint64_t>(experts); // and the router
}

uint64_t ModelSpec::blockExtraParameters() const
{
    if (!hasDimensions())
        return 0;
    const uint64_t h = static_cast<uint64_t>(hidden);
    const uint64_t kv = static_cast<uint64_t>(kvDim());
    const uint64_t f = static_cast<uint64_t>(ffnOrDefault());
    if (!layerNormBiases)
        return 2 * h; // two RMSNorm weights
    uint64_t extras = h + 2 * kv + h; // q/k/v/o biases
    extras += gatedMlp ? 2 * f + h : f + h; // MLP biases
    return extras + 2 * 2 * h; // two LayerNorms, weight and bias
}

uint64_t ModelSpec::layerParameters(int index) const
{
    if (!hasDimensions())
        return 0;
    const uint64_t mlp = moeLayer(index) ? routedExpertParameters() + sharedMoeParameters() : denseMlpParameters();
    return attentionParameters() + mlp + blockExtraParameters();
}

uint64_t ModelSpec::embeddingParameters() const
{
    return static_cast<uint64_t>(std::max(vocab, 0) + std::max(positions, 0))
        * static_cast<uint64_t>(std::max(hidden, 0));
}

uint64_t ModelSpec::outputLayerParameters() const
{
    return tiedEmbeddings ? 0 : static_cast<uint64_t>(std::max(vocab, 0)) * static_cast<uint64_t>(std::max(hidden, 0));
}

uint64_t ModelSpec::blockLinearParameters() const
{
    if (!hasDimensions())
        return 0;
    return blocksParameters() - static_cast<uint64_t>(layers) * blockExtraParameters();
}

uint64_t ModelSpec::blocksParameters() const
{
    if (!hasDimensions())
        return 0;
    // Two kinds of block, counted once each: a loop over the layers made every plan O(layers) per
    // figure, and the ladder asks for these figures thousands of times.
    const uint64_t moeCount = static_cast<uint64_t>(moeLayers());
    const uint64_t denseCount = static_cast<uint64_t>(std::max(layers, 0)) - moeCount;
    uint64_t total = 0;
    if (denseCount > 0)
        total += denseCount * layerParameters(0);
    if (moeCount > 0)
        total += moeCount * layerParameters(layers - 1);
    return total;
}

std::string ModelSpec::sizeProblem() const
{
    constexpr double most = 1e15;
    if (static_cast<double>(parameters) > most)
        return "more than 10^15 parameters, more than any model";
    const double h = std::max(hidden, 0);
    const double widest = std::max({ double(ffn), double(expertFfn), double(sharedExpertFfn), 4.0 * h });
    const double mlps = std::max(experts, 1) + std::max(sharedExperts, 0);
    const double latent = double(std::max(heads, 0)) * (std::max(qLoraRank, 0) + std::max(kvLoraRank, 0) + h)
        * (std::max(qkNopeHeadDim, 0) + std::max(qkRopeHeadDim, 0) + std::max(vHeadDim, 0));
    const double rough = double(std::max(layers, 0)) * (4.0 * h * h + 3.0 * h * widest * mlps + latent)
        + 2.0 * (std::max(vocab, 0) + std::max(positions, 0)) * h;
    if (rough <= most)
        return {};
    return "the dimensions describe about " + std::to_string(static_cast<long long>(std::min(rough, 1e30) / 1e12))
        + " trillion parameters, more than any model";
}

uint64_t ModelSpec::countedParameters() const
{
    if (!hasDimensions() || vocab <= 0)
        return 0;
    const uint64_t h = static_cast<uint64_t>(hidden);
    const uint64_t blocks = blocksParameters();
    const uint64_t finalNorm = layerNormBiases ? 2 * h : h;
    return blocks + embeddingParameters() + outputLayerParameters() + finalNorm;
}

uint64_t ModelSpec::activeParameters() const
{
    const uint64_t total = totalParameters();
    if (!moe() || experts <= 0)
        return total;
    const uint64_t idleExperts = static_cast<uint64_t>(experts - std::min(topK(), experts));
    const uint64_t perExpert = routedExpertParameters() / static_cast<uint64_t>(experts);
    return total - idleExperts * perExpert * static_cast<uint64_t>(moeLayers());
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

// Mixtral-8x7B-v0.1's config.json: 8 experts of 14336, top-2, GQA 32/8, untied head.
ModelSpec mixtral8x7b()
{
    ModelSpec model = llamaLike("mixtral-8x7b", 32, 4096, 32, 8, 14336);
    model.experts = 8;
    model.expertsPerToken = 2;
    return model;
}

std::vector<ModelSpec> presets()
{
    ModelSpec llama3 = llamaLike("llama-3-70b", 80, 8192, 64, 8, 28672);
    llama3.vocab = 128256;
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
        llama3,
        mixtral8x7b(),
    };
}

} // namespace

std::optional<ModelSpec> modelPreset(std::string_view name)
{
    const std::string wanted = lowercase(name);
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
