#include "core/planner/activationmodel.h"

#include <algorithm>

namespace oomlens::planner {

ActivationEstimate estimateActivations(const ModelSpec& model, const TrainingSetup& setup)
{
    ActivationEstimate estimate;
    if (!model.hasDimensions())
        return estimate;
    const uint64_t e = static_cast<uint64_t>(setup.activationBytes());
    const uint64_t tokens = static_cast<uint64_t>(setup.microBatch) * static_cast<uint64_t>(setup.sequence);
    const uint64_t h = static_cast<uint64_t>(model.hidden);
    const uint64_t kv = static_cast<uint64_t>(model.kvDim());
    const uint64_t f = static_cast<uint64_t>(model.ffnOrDefault());
    const uint64_t a = static_cast<uint64_t>(model.heads);
    const uint64_t s = static_cast<uint64_t>(setup.sequence);
    const uint64_t b = static_cast<uint64_t>(setup.microBatch);
    const uint64_t mask = model.dropout ? 1 : 0; // dropout masks are one byte per element

    // Per token: both norms' inputs (2h), the QKV projection's input (h), Q (h), K and V (kv
    // each), the output projection's input (h), the MLP's input (h), then the MLP's inner
    // tensors: fc output and activation output (2f), or for a gated MLP gate, up, activation
    // and product (4f). Dropout adds a mask after attention and after the MLP.
    // Eager attention over grouped K/V (Hugging Face's repeat_kv) first copies K and V out to
    // every query head, and the two matmuls save those copies: h wide, not kv. SDPA and
    // FlashAttention take the grouped K and V as they are.
    const uint64_t savedKv = setup.attention == Attention::Eager ? h : kv;
    // Each norm also saves fp32 statistics per token for backward: LayerNorm its mean and
    // reciprocal standard deviation, RMSNorm only the latter.
    const uint64_t normStatistics = 2 * (model.layerNormBiases ? 8 : 4);
    const uint64_t attentionPerToken = e * (2 * h + h + h + 2 * savedKv + h) + mask * h + normStatistics;
    const uint64_t mlpPerToken = e * (h + (model.gatedMlp ? 4 : 2) * f) + mask * h;
    uint64_t perLayer = tokens * (attentionPerToken + mlpPerToken);
    if (setup.attention == Attention::Eager) {
        // Softmax output, and with dropout its mask and the dropped-out probabilities.
        const uint64_t perScore = e + (model.dropout ? 1 + e : 0);
        estimate.scoreBytesPerLayer = b * a * s * s * perScore;
    } else {
        estimate.scoreBytesPerLayer = 0;
        perLayer += b * a * s * 4; // the fp32 log-sum-exp FlashAttention keeps per query
    }
    perLayer += estimate.scoreBytesPerLayer;
    estimate.perLayerBytes = perLayer;

    const uint64_t layers = static_cast<uint64_t>(model.layers);
    // A checkpointed block keeps only its input; during backward one of them at a time is
    // recomputed whole. Full checkpointing does that for every block, every:K for blocks 0, K,
    // 2K, ... while the others keep everything.
    const uint64_t checkpointed = static_cast<uint64_t>(setup.checkpointedBlocks(model.layers));
    uint64_t blocks = (layers - checkpointed) * perLayer;
    if (checkpointed > 0)
        blocks += checkpointed * tokens * e * h + perLayer;

    // The LM head's logits stay referenced by the model output (outputs.logits), and the loss
    // upcasts them to fp32 and saves its log-softmax: (e + 4) bytes per logit. Backward then
    // creates the fp32 gradient of the log-softmax and its cast back to e bytes.
    const uint64_t logits = tokens * static_cast<uint64_t>(std::max(model.vocab, 0));
    estimate.logitsSavedBytes = logits * (e + 4);
    estimate.savedBytes = blocks + estimate.logitsSavedBytes;
    const uint64_t logitsGradient = logits * (4 + e);
    // Inside a block, backward holds the gradient of its widest tensor: the MLP's inner one,
    // or the scores with eager attention.
    const uint64_t layerGradient = tokens * e * (f + h) + (setup.attention == Attention::Eager ? b * a * s * s * e : 0);
    estimate.backwardTemporaryBytes = std::max(logitsGradient, layerGradient);
    return estimate;
}

} // namespace oomlens::planner
