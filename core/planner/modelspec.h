#pragma once

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

    bool hasDimensions() const { return layers > 0 && hidden > 0 && heads > 0; }
    int kvHeadsOrHeads() const { return kvHeads > 0 ? kvHeads : heads; }
    int ffnOrDefault() const { return ffn > 0 ? ffn : 4 * hidden; }
    int headDim() const { return heads > 0 ? hidden / heads : 0; }
    int kvDim() const { return kvHeadsOrHeads() * headDim(); }

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
// mistral-7b; case-insensitive.
std::optional<ModelSpec> modelPreset(std::string_view name);
std::vector<std::string> modelPresetNames();

} // namespace oomlens::planner
