#include "core/planner/activationmodel.h"

#include <algorithm>

namespace oomlens::planner {

namespace {

uint64_t ceilDiv(uint64_t value, uint64_t by)
{
    return by > 1 ? (value + by - 1) / by : value;
}

} // namespace

ActivationEstimate estimateActivations(const ModelSpec& model, const TrainingSetup& setup)
{
    ActivationEstimate estimate;
    if (!model.hasDimensions())
        return estimate;
    const Parallelism& parallel = setup.parallel;
    const uint64_t t = static_cast<uint64_t>(std::max(parallel.tensor, 1));
    const uint64_t cp = static_cast<uint64_t>(std::max(parallel.context, 1));
    const uint64_t e = static_cast<uint64_t>(setup.activationBytes());
    const uint64_t s = static_cast<uint64_t>(setup.sequence);
    const uint64_t b = static_cast<uint64_t>(setup.microBatch);
    const uint64_t localSequence = ceilDiv(s, cp); // context parallelism: each rank's share of the queries
    const uint64_t tokens = b * localSequence;
    const uint64_t h = static_cast<uint64_t>(model.hidden);
    const uint64_t a = static_cast<uint64_t>(model.heads);
    const uint64_t f = static_cast<uint64_t>(model.ffnOrDefault());
    const uint64_t mask = model.dropout ? 1 : 0; // dropout masks are one byte per element

    // Widths of Q, K, V and the attention output. Multi-head latent attention saves its
    // latents (and their norms' inputs) besides the per-head Q, K and V it expands them to.
    uint64_t qWidth = h;
    uint64_t kvWidth = static_cast<uint64_t>(model.kvDim());
    uint64_t vWidth = kvWidth;
    uint64_t outWidth = h;
    uint64_t latentWidth = 0;
    if (model.latentAttention()) {
        const uint64_t qk = static_cast<uint64_t>(model.qkNopeHeadDim + model.qkRopeHeadDim);
        qWidth = a * qk;
        kvWidth = a * qk;
        vWidth = a * static_cast<uint64_t>(model.vHeadDim);
        outWidth = vWidth;
        latentWidth = static_cast<uint64_t>(model.qLoraRank + model.kvLoraRank + model.qkRopeHeadDim);
    }
    // Eager attention over grouped K/V (Hugging Face's repeat_kv) first copies K and V out to
    // every query head, and the two matmuls save those copies: h wide, not kv. SDPA and
    // FlashAttention take the grouped K and V as they are.
    if (setup.attention == Attention::Eager && !model.latentAttention()) {
        kvWidth = h;
        vWidth = h;
    }
    // Tensor parallelism splits the heads; K and V never below one head per rank.
    const uint64_t headDim = static_cast<uint64_t>(std::max(model.headDim(), 1));
    const auto split = [t](uint64_t width, uint64_t atLeast) { return std::max(width / t, atLeast); };
    const uint64_t kvSplitFloor = model.latentAttention() ? 0 : headDim;

    // Per token, in pieces tensor parallelism leaves whole (without sequence parallelism): both
    // norms' inputs (2h), the QKV projection's input (h), the MLP's input (h), the dropout masks
    // after attention and after the MLP, the norms' fp32 statistics (LayerNorm its mean and
    // reciprocal standard deviation, RMSNorm only the latter), MLA's latents.
    const uint64_t normStatistics = 2 * (model.layerNormBiases ? 8 : 4);
    const uint64_t replicatedAttention = e * (2 * h + h + latentWidth) + mask * h + normStatistics;
    const uint64_t replicatedMlp = e * h + mask * h;
    // ... and in pieces it splits: Q, K, V, the output projection's input, the MLP's inner
    // tensors: fc output and activation output (2f), or for a gated MLP gate, up, activation
    // and product (4f).
    const uint64_t splitAttention
        = e * (split(qWidth, 1) + split(kvWidth, kvSplitFloor) + split(vWidth, kvSplitFloor) + split(outWidth, 1));
    const uint64_t mlpInner = model.gatedMlp ? 4 : 2;
    const uint64_t splitDenseMlp = e * mlpInner * split(f, 1);
    // Sequence parallelism splits the replicated pieces over the same t ranks.
    const uint64_t replicatedShare = parallel.sequenceParallel ? t : 1;
    const auto perTokenLayer = [&](uint64_t splitMlp, uint64_t extraReplicated) {
        return ceilDiv(replicatedAttention + replicatedMlp + extraReplicated, replicatedShare) + splitAttention
            + splitMlp;
    };

    // The attention core: eager attention saves the softmax output, and with dropout its mask
    // and the dropped-out probabilities, per head per query per key; selective recompute drops
    // them. SDPA / FlashAttention keeps an fp32 log-sum-exp per head per query.
    const uint64_t headsPerRank = split(a, 1);
    uint64_t scores = 0;
    uint64_t logSumExp = 0;
    if (setup.attention == Attention::Eager && setup.checkpointing != Checkpointing::Selective) {
        const uint64_t perScore = e + (model.dropout ? 1 + e : 0);
        scores = b * headsPerRank * localSequence * s * perScore;
    } else if (setup.attention == Attention::Sdpa) {
        logSumExp = b * headsPerRank * localSequence * 4;
    }
    estimate.scoreBytesPerLayer = scores;

    estimate.perDenseLayerBytes = tokens * perTokenLayer(splitDenseMlp, 0) + scores + logSumExp;
    if (model.moe()) {
        // Each token visits top-k routed experts (times the capacity factor: the most a rank
        // takes); the dispatch keeps every routed copy of its input, each expert its MLP's inner
        // tensors. Shared experts see every token; the router keeps its fp32 logits.
        const double capacity = std::max(model.capacityFactor, 1.0);
        const uint64_t routedTokens
            = static_cast<uint64_t>(static_cast<double>(tokens * static_cast<uint64_t>(model.topK())) * capacity);
        const uint64_t routedPerToken
            = e * h + e * mlpInner * split(static_cast<uint64_t>(model.expertFfnOrDefault()), 1);
        const uint64_t sharedMlp = static_cast<uint64_t>(model.sharedExperts) * e * mlpInner
            * split(static_cast<uint64_t>(model.sharedExpertFfnOrDefault()), 1);
        const uint64_t router = 4 * static_cast<uint64_t>(model.experts);
        estimate.perMoeLayerBytes
            = tokens * perTokenLayer(sharedMlp, router) + routedTokens * routedPerToken + scores + logSumExp;
    }
    estimate.perLayerBytes = model.moeLayers() > 0 ? estimate.perMoeLayerBytes : estimate.perDenseLayerBytes;
    estimate.layerInputBytes = ceilDiv(tokens * e * h, replicatedShare);

    // The LM head's logits stay referenced by the model output (outputs.logits), and the loss
    // upcasts them to fp32 and saves its log-softmax: (e + 4) bytes per logit. Backward then
    // creates the fp32 gradient of the log-softmax and its cast back to e bytes. Tensor
    // parallelism splits the vocabulary (Megatron's vocab-parallel cross entropy).
    const uint64_t logits = tokens * ceilDiv(static_cast<uint64_t>(std::max(model.vocab, 0)), t);
    estimate.logitsSavedBytes = logits * (e + 4);
    estimate.logitsGradientBytes = logits * (4 + e);

    // A checkpointed block keeps only its input; during backward one of them at a time is
    // recomputed whole.
    const uint64_t blocks = keptBlockBytes(model, setup, estimate, 0, model.layers);
    const bool recomputes = setup.checkpointedBlocks(model.layers) > 0;
    estimate.savedBytes = blocks + (recomputes ? estimate.perLayerBytes : 0) + estimate.logitsSavedBytes;

    // Inside a block, backward holds the gradient of its widest tensor: the MLP's inner one,
    // or the scores with eager attention.
    const uint64_t widestInner = std::max(split(f, 1),
        model.moe() ? split(static_cast<uint64_t>(model.expertFfnOrDefault()), 1) * static_cast<uint64_t>(model.topK())
                    : 0);
    estimate.layerGradientBytes = tokens * e * (widestInner + h)
        + (setup.attention == Attention::Eager ? b * headsPerRank * localSequence * s * e : 0);
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
