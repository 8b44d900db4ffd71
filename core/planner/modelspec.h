#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::planner {

// Which projections of each block carry LoRA adapters: every linear layer (QLoRA's recipe, peft's
// "all-linear"), the four attention projections q, k, v, o, or q and v alone (the LoRA paper's
// choice and peft's default for LLaMA-style models).
enum class LoraTargets { AllLinear, Attention, QueryValue };

// A decoder-only transformer as the planner sees it: enough dimensions to count parameters
// and the activations of one block. Zero means "not given"; a model described only by its
// parameter count still gets model-state figures, but no activations.
struct ModelSpec
{
    std::string name;
    uint64_t parameters = 0; // 0: count from the dimensions
    uint64_t largestLayer = 0; // given; 0: from the dimensions
    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kvHeads = 0; // 0: same as heads (no grouped-query attention)
    int vocab = 0;
    int ffn = 0; // 0: 4 x hidden
    int positions = 0; // learned position embeddings (GPT-2, OPT); 0 for rotary models
    bool tiedEmbeddings = false; // the LM head reuses the input embedding
    bool gatedMlp = false; // SwiGLU-style MLP: gate, up and down projections
    bool layerNormBiases = false; // LayerNorm and linear biases (GPT-2) instead of bias-free RMSNorm (LLaMA)
    bool dropout = false; // dropout active in training: its masks are saved for backward
    // Mixture of experts (Mixtral's num_local_experts, Qwen-MoE's num_experts, DeepSeek's
    // n_routed_experts): the MLP of an MoE layer is `experts` routed MLPs of `expertFfn`, of which
    // each token visits `expertsPerToken`, plus `sharedExperts` MLPs of `sharedExpertFfn` that
    // every token visits, and a router (hidden x experts). The first `denseLayers` layers keep a
    // dense MLP of `ffn` (DeepSeek's first_k_dense_replace). 0 experts: a dense model.
    int experts = 0;
    int expertsPerToken = 0;
    int expertFfn = 0; // 0: ffn
    int sharedExperts = 0;
    int sharedExpertFfn = 0; // 0: expertFfn
    int denseLayers = 0;
    double capacityFactor = 0; // tokens an expert takes, over the even share; 0: dropless
    // Multi-head latent attention (DeepSeek-V2/V3): Q and K/V go through low-rank projections and
    // the cache keeps the kv_lora_rank latent plus the rotary key. 0 kvLoraRank: ordinary attention.
    int qLoraRank = 0; // 0: a full-rank query projection
    int kvLoraRank = 0;
    int qkNopeHeadDim = 0;
    int qkRopeHeadDim = 0;
    int vHeadDim = 0;

    bool hasDimensions() const { return layers > 0 && hidden > 0 && heads > 0; }
    int kvHeadsOrHeads() const { return kvHeads > 0 ? kvHeads : heads; }
    int ffnOrDefault() const { return ffn > 0 ? ffn : 4 * hidden; }
    int headDim() const { return heads > 0 ? hidden / heads : 0; }
    int kvDim() const { return kvHeadsOrHeads() * headDim(); }
    bool moe() const { return experts > 0; }
    bool latentAttention() const { return kvLoraRank > 0; }
    int expertFfnOrDefault() const { return expertFfn > 0 ? expertFfn : ffnOrDefault(); }
    int sharedExpertFfnOrDefault() const { return sharedExpertFfn > 0 ? sharedExpertFfn : expertFfnOrDefault(); }
    int topK() const { return expertsPerToken > 0 ? expertsPerToken : 1; }
    // Layer `index` (0-based) has experts.
    bool moeLayer(int index) const { return moe() && index >= denseLayers; }
    int moeLayers() const { return moe() ? std::max(layers - denseLayers, 0) : 0; }

    // One block's attention weights (q, k, v, o, or MLA's projections and their norms).
    uint64_t attentionParameters() const;
    // One dense MLP block's weights (ffn wide), and one MoE layer's routed experts, its shared
    // experts with the router.
    uint64_t denseMlpParameters() const;
    uint64_t routedExpertParameters() const;
    uint64_t sharedMoeParameters() const;
    // The norms and biases of one block.
    uint64_t blockExtraParameters() const;
    // One whole block, and every block together.
    uint64_t layerParameters(int index) const;
    uint64_t blocksParameters() const;
    // The input embedding (and learned positions), and the LM head's own matrix (0 when tied).
    uint64_t embeddingParameters() const;
    uint64_t outputLayerParameters() const;
    // Routed experts over all layers: what expert parallelism splits.
    uint64_t totalExpertParameters() const { return routedExpertParameters() * static_cast<uint64_t>(moeLayers()); }
    // Parameters one token goes through (top-k of the routed experts): an MoE's "active" count.
    uint64_t activeParameters() const;

    // Empty, or why these dimensions (or the given count) describe no model: more than 10^15
    // parameters, a thousand times the largest trained, where every byte figure a plan derives
    // would pass 2^64. Counted in floating point, so that the check itself cannot wrap.
    std::string sizeProblem() const;

    // Parameters counted from the dimensions (0 without them).
    uint64_t countedParameters() const;
    // The given count, else the counted one.
    uint64_t totalParameters() const { return parameters > 0 ? parameters : countedParameters(); }
    // Parameters of the largest single module (DeepSpeed's largest_layer_params): ZeRO-3 gathers
    // it whole. The embedding usually; the widest MLP projection otherwise.
    uint64_t largestLayerParameters() const;
    // Weights of every linear projection inside the blocks (what LoRA adapts and QLoRA quantizes).
    uint64_t blockLinearParameters() const;
    // Trainable parameters of rank-r adapters on the `targets` projections of every block.
    uint64_t loraParameters(int rank, LoraTargets targets = LoraTargets::AllLinear) const;
};

// gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b, llama-2-13b, llama-2-70b, llama-65b,
// mistral-7b, llama-3-70b, mixtral-8x7b; case-insensitive.
std::optional<ModelSpec> modelPreset(std::string_view name);
std::vector<std::string> modelPresetNames();

} // namespace oomlens::planner
