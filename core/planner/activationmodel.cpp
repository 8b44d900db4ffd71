#include "core/planner/activationmodel.h"

#include <algorithm>

namespace oomlens::planner {

namespace {

uint64_t ceilDiv(uint64_t value, uint64_t by)
{
    return by > 1 ? (value + by - 1) / by : value;
}

// The sizes every formula below reads, for one GPU: e-byte elements, b sequences of s tokens of
// which this rank holds localSequence queries, t tensor-parallel ranks.
struct Dimensions
{
    uint64_t t = 1;
    uint64_t e = 0;
    uint64_t s = 0;
    uint64_t b = 0;
    uint64_t localSequence = 0;
    uint64_t tokens = 0;
    uint64_t h = 0;
    uint64_t a = 0;
    uint64_t f = 0;
    uint64_t mask = 0;

    // Tensor parallelism's share of a width, never below `atLeast`.
    uint64_t split(uint64_t width, uint64_t atLeast) const { return std::max(width / t, atLeast); }
    uint64_t headsPerRank() const { return split(a, 1); }
};

Dimensions dimensionsOf(const ModelSpec& model, const TrainingSetup& setup)
{
    const Parallelism& parallel = setup.parallel;
    Dimensions d;
    d.t = static_cast<uint64_t>(std::max(parallel.tensor, 1));
    const uint64_t cp = static_cast<uint64_t>(std::max(parallel.context, 1));
    d.e = static_cast<uint64_t>(setup.activationBytes());
    d.s = static_cast<uint64_t>(setup.sequence);
    d.b = static_cast<uint64_t>(setup.microBatch);
    d.localSequence = ceilDiv(d.s, cp); // context parallelism: each rank's share of the queries
    d.tokens = d.b * d.localSequence;
    d.h = static_cast<uint64_t>(model.hidden);
    d.a = static_cast<uint64_t>(model.heads);
    d.f = static_cast<uint64_t>(model.ffnOrDefault());
    d.mask = model.dropout ? 1 : 0; // dropout masks are one byte per element
    return d;
}

struct AttentionWidths
{
    uint64_t q = 0;
    uint64_t kv = 0;
    uint64_t v = 0;
    uint64_t out = 0;
    uint64_t latent = 0;
};

// Widths of Q, K, V and the attention output. Multi-head latent attention saves its
// latents (and their norms' inputs) besides the per-head Q, K and V it expands them to.
AttentionWidths attentionWidths(const ModelSpec& model, const TrainingSetup& setup, const Dimensions& d)
{
    AttentionWidths widths { d.h, static_cast<uint64_t>(model.kvDim()), 0, d.h, 0 };
    widths.v = widths.kv;
    if (model.latentAttention()) {
        const uint64_t qk = static_cast<uint64_t>(model.qkNopeHeadDim + model.qkRopeHeadDim);
        widths.q = d.a * qk;
        widths.kv = d.a * qk;
        widths.v = d.a * static_cast<uint64_t>(model.vHeadDim);
        widths.out = widths.v;
        widths.latent = static_cast<uint64_t>(model.qLoraRank + model.kvLoraRank + model.qkRopeHeadDim);
    }
    // Eager attention over grouped K/V (Hugging Face's repeat_kv) first copies K and V out to
    // every query head, and the two matmuls save those copies: h wide, not kv. SDPA and
    // FlashAttention take the grouped K and V as they are.
    if (setup.attention == Attention::Eager && !model.latentAttention()) {
        widths.kv = d.h;
        widths.v = d.h;
    }
    return widths;
}

// What one block saves per token, in the pieces tensor and sequence parallelism treat alike.
struct TokenPieces
{
    uint64_t replicatedAttention = 0;
    uint64_t replicatedMlp = 0;
    uint64_t splitAttention = 0;
    uint64_t mlpInner = 0; // the MLP's inner tensors per element of its width
    uint64_t splitDenseMlp = 0;
    uint64_t replicatedShare = 1; // sequence parallelism's split of the replicated pieces

    uint64_t perTokenLayer(uint64_t splitMlp, uint64_t extraReplicated) const
    {
        return ceilDiv(replicatedAttention + replicatedMlp + extraReplicated, replicatedShare) + splitAttention
            + splitMlp;
    }
};

TokenPieces tokenPieces(const ModelSpec& model, const TrainingSetup& setup, const Dimensions& d)
{
    const AttentionWidths widths = attentionWidths(model, setup, d);
    // Tensor parallelism splits the heads; K and V never below one head per rank.
    const uint64_t headDim = static_cast<uint64_t>(std::max(model.headDim(), 1));
    const uint64_t kvSplitFloor = model.latentAttention() ? 0 : headDim;
    const uint64_t e = d.e;
    TokenPieces pieces;
    // Per token, in pieces tensor parallelism leaves whole (without sequence parallelism): both
    // norms' inputs (2h), the QKV projection's input (h), the MLP's input (h), the dropout masks
    // after attention and after the MLP, the norms' fp32 statistics (LayerNorm its mean and
    // reciprocal standard deviation, RMSNorm only the latter), MLA's latents.
    const uint64_t normStatistics = 2 * (model.layerNormBiases ? 8 : 4);
    pieces.replicatedAttention = e * (2 * d.h + d.h + widths.latent) + d.mask * d.h + normStatistics;
    pieces.replicatedMlp = e * d.h + d.mask * d.h;
    // ... and in pieces it splits: Q, K, V, the output projection's input, the MLP's inner
    // tensors: fc output and activation output (2f), or for a gated MLP gate, up, activation
    // and product (4f).
    pieces.splitAttention = e
        * (d.split(widths.q, 1) + d.split(widths.kv, kvSplitFloor) + d.split(widths.v, kvSplitFloor)
            + d.split(widths.out, 1));
    pieces.mlpInner = model.gatedMlp ? 4 : 2;
    pieces.splitDenseMlp = e * pieces.mlpInner * d.split(d.f, 1);
    // Sequence parallelism splits the replicated pieces over the same t ranks.
    pieces.replicatedShare = setup.parallel.sequenceParallel ? d.t : 1;
    return pieces;
}

struct AttentionCore
{
    uint64_t scores = 0;
    uint64_t logSumExp = 0;
};

// The attention core: eager attention saves the softmax output, and with dropout its mask
// and the dropped-out probabilities, per head per query per key; selective recompute drops
// them. SDPA / FlashAttention keeps an fp32 log-sum-exp per head per query.
AttentionCore attentionCore(const ModelSpec& model, const TrainingSetup& setup, const Dimensions& d)
{
    AttentionCore core;
    if (setup.attention == Attention::Eager && setup.checkpointing != Checkpointing::Selective) {
        const uint64_t perScore = d.e + (model.dropout ? 1 + d.e : 0);
        core.scores = d.b * d.headsPerRank() * d.localSequence * d.s * perScore;
    } else if (setup.attention == Attention::Sdpa) {
        core.logSumExp = d.b * d.headsPerRank() * d.localSequence * 4;
    }
    return core;
}

// Each token visits top-k routed experts (times the capacity factor: the most a rank
// takes); the dispatch keeps every routed copy of its input, each expert its MLP's inner
// tensors. Shared experts see every token; the router keeps its fp32 logits.
uint64_t moeLayerBytes(
    const ModelSpec& model, const Dimensions& d, const TokenPieces& pieces, const AttentionCore& core)
{
    const double capacity = std::max(model.capacityFactor, 1.0);
    const uint64_t routedTokens
        = static_cast<uint64_t>(static_cast<double>(d.tokens * static_cast<uint64_t>(model.topK())) * capacity);
    const uint64_t routedPerToken
        = d.e * d.h + d.e * pieces.mlpInner * d.split(static_cast<uint64_t>(model.expertFfnOrDefault()), 1);
    const uint64_t sharedMlp = static_cast<uint64_t>(model.sharedExperts) * d.e * pieces.mlpInner
        * d.split(static_cast<uint64_t>(model.sharedExpertFfnOrDefault()), 1);
    const uint64_t router = 4 * static_cast<uint64_t>(model.experts);
    return d.tokens * pieces.perTokenLayer(sharedMlp, router) + routedTokens * routedPerToken + core.scores
        + core.logSumExp;
}

// Inside a block, backward holds the gradient of its widest tensor: the MLP's inner one,
// or the scores with eager attention.
uint64_t layerGradientBytes(const ModelSpec& model, const TrainingSetup& setup, const Dimensions& d)
{
    const uint64_t widestInner = std::max(d.split(d.f, 1),
        model.moe()
            ? d.split(static_cast<uint64_t>(model.expertFfnOrDefault()), 1) * static_cast<uint64_t>(model.topK())
            : 0);
    return d.tokens * d.e * (widestInner + d.h)
        + (setup.attention == Attention::Eager ? d.b * d.headsPerRank() * d.localSequence * d.s * d.e : 0);
}

} // namespace

ActivationEstimate estimateActivations(const ModelSpec& model, const TrainingSetup& setup)
{
    ActivationEstimate estimate;
    if (!model.hasDimensions())
        return estimate;
    const Dimensions d = dimensionsOf(model, setup);
    const TokenPieces pieces = tokenPieces(model, setup, d);
    const AttentionCore core = attentionCore(model, setup, d);
    estimate.scoreBytesPerLayer = core.scores;
    estimate.perDenseLayerBytes
        = d.tokens * pieces.perTokenLayer(pieces.splitDenseMlp, 0) + core.scores + core.logSumExp;
    if (model.moe())
        estimate.perMoeLayerBytes = moeLayerBytes(model, d, pieces, core);
    estimate.perLayerBytes = model.moeLayers() > 0 ? estimate.perMoeLayerBytes : estimate.perDenseLayerBytes;
    estimate.layerInputBytes = ceilDiv(d.tokens * d.e * d.h, pieces.replicatedShare);

    // The LM head's logits stay referenced by the model output (outputs.logits), and the loss
    // upcasts them to fp32 and saves its log-softmax: (e + 4) bytes per logit. Backward then
    // creates the fp32 gradient of the log-softmax and its cast back to e bytes. Tensor
    // parallelism splits the vocabulary (Megatron's vocab-parallel cross entropy).
    const uint64_t logits = d.tokens * ceilDiv(static_cast<uint64_t>(std::max(model.vocab, 0)), d.t);
    estimate.logitsSavedBytes = logits * (d.e + 4);
    estimate.logitsGradientBytes = logits * (4 + d.e);

    // A checkpointed block keeps only its input; during backward one of them at a time is
    // recomputed whole.
    const uint64_t blocks = keptBlockBytes(model, setup, estimate, 0, model.layers);
    const bool recomputes = setup.checkpointedBlocks(model.layers) > 0;
    estimate.savedBytes = blocks + (recomputes ? estimate.perLayerBytes : 0) + estimate.logitsSavedBytes;

    estimate.layerGradientBytes = layerGradientBytes(model, setup, d);
    estimate.backwardTemporaryBytes = std::max(estimate.logitsGradientBytes, estimate.layerGradientBytes);
    return estimate;
}

uint64_t keptBlockBytes(
    const ModelSpec& model, const TrainingSetup& setup, const ActivationEstimate& estimate, int first, int count)
{
    // Counted, not walked: the ladder plans a model many times, and a config may claim any number
    // of layers.
    const int64_t begin = std::max(first, 0);
    const int64_t end = std::min<int64_t>(int64_t(first) + count, model.layers);
    if (end <= begin)
        return 0;
    // Checkpointed blocks in [a, b): all under Full (or every:1), blocks 0, K, 2K, ... under EveryK.
    const auto checkpointedIn = [&](int64_t a, int64_t b) -> int64_t {
        if (b <= a)
            return 0;
        if (setup.checkpointing == Checkpointing::Full
            || (setup.checkpointing == Checkpointing::EveryK && setup.checkpointEvery <= 1))
            return b - a;
        if (setup.checkpointing != Checkpointing::EveryK)
            return 0;
        const int64_t k = setup.checkpointEvery;
        return (b + k - 1) / k - (a + k - 1) / k;
    };
    const int64_t moeBegin = model.moe() ? std::clamp<int64_t>(model.denseLayers, begin, end) : end;
    const int64_t checkpointed = checkpointedIn(begin, end);
    const int64_t keptMoe = (end - moeBegin) - checkpointedIn(moeBegin, end);
    const int64_t keptDense = (end - begin) - checkpointed - keptMoe;
    return uint64_t(checkpointed) * estimate.layerInputBytes + uint64_t(keptMoe) * estimate.perMoeLayerBytes
        + uint64_t(keptDense) * estimate.perDenseLayerBytes;
}

} // namespace oomlens::planner
