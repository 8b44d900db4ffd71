#include "core/planner/hfconfig.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include <initializer_list>

namespace oomlens::planner {

namespace {

using Json = nlohmann::json;

// The first of `keys` holding a positive integer.
int firstInt(const Json& config, std::initializer_list<const char*> keys)
{
    for (const char* key : keys) {
        const auto it = config.find(key);
        if (it != config.end() && it->is_number_integer() && it->get<int64_t>() > 0)
            return static_cast<int>(it->get<int64_t>());
    }
    return 0;
}

bool anyPositive(const Json& config, std::initializer_list<const char*> keys)
{
    for (const char* key : keys) {
        const auto it = config.find(key);
        if (it != config.end() && it->is_number() && it->get<double>() > 0)
            return true;
    }
    return false;
}

std::string text(const Json& config, const char* key)
{
    const auto it = config.find(key);
    return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double firstNumber(const Json& config, std::initializer_list<const char*> keys)
{
    for (const char* key : keys) {
        const auto it = config.find(key);
        if (it != config.end() && it->is_number() && it->get<double>() > 0)
            return it->get<double>();
    }
    return 0;
}

// Mixture of experts and latent attention, in the three spellings in use: Mixtral's
// num_local_experts, Qwen-MoE's num_experts with shared_expert_intermediate_size (one shared
// expert), DeepSeek's n_routed_experts, n_shared_experts (each moe_intermediate_size wide) and
// first_k_dense_replace, with MLA's q_lora_rank / kv_lora_rank / head dimensions.
void readExperts(const Json& c, ModelSpec& model)
{
    model.experts = firstInt(c, { "num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts" });
    if (model.experts > 0) {
        model.expertsPerToken = firstInt(c, { "num_experts_per_tok", "moe_top_k", "top_k" });
        model.expertFfn = firstInt(c, { "moe_intermediate_size", "expert_intermediate_size" });
        model.denseLayers = firstInt(c, { "first_k_dense_replace" });
        model.capacityFactor = firstNumber(c, { "capacity_factor", "moe_capacity_factor" });
        if (const int shared = firstInt(c, { "shared_expert_intermediate_size" }); shared > 0) {
            model.sharedExperts = 1;
            model.sharedExpertFfn = shared;
        } else {
            model.sharedExperts = firstInt(c, { "n_shared_experts", "num_shared_experts" });
        }
    }
    model.kvLoraRank = firstInt(c, { "kv_lora_rank" });
    if (model.kvLoraRank > 0) {
        model.qLoraRank = firstInt(c, { "q_lora_rank" }); // null in DeepSeek-V2-Lite: a full-rank query
        model.qkNopeHeadDim = firstInt(c, { "qk_nope_head_dim" });
        model.qkRopeHeadDim = firstInt(c, { "qk_rope_head_dim" });
        model.vHeadDim = firstInt(c, { "v_head_dim" });
    }
}

} // namespace

HfConfigResult modelFromHfConfig(std::string_view jsonText)
{
    const Json config = Json::parse(jsonText.begin(), jsonText.end(), nullptr, false);
    if (config.is_discarded() || !config.is_object())
        return { std::nullopt, "not a JSON object" };
    // Multimodal configs keep the language model in text_config.
    const Json& c
        = config.contains("text_config") && config["text_config"].is_object() ? config["text_config"] : config;

    ModelSpec model;
    const std::string type = text(c, "model_type");
    model.name = type.empty() ? "config.json" : type;
    if (const auto names = config.find("_name_or_path");
        names != config.end() && names->is_string() && !names->get<std::string>().empty())
        model.name = names->get<std::string>();
    model.layers = firstInt(c, { "num_hidden_layers", "n_layer", "num_layers", "n_layers" });
    model.hidden = firstInt(c, { "hidden_size", "n_embd", "d_model", "dim" });
    model.heads = firstInt(c, { "num_attention_heads", "n_head", "num_heads", "n_heads" });
    model.kvHeads = firstInt(c, { "num_key_value_heads", "num_kv_heads", "n_kv_heads" });
    model.vocab = firstInt(c, { "vocab_size", "padded_vocab_size" });
    model.ffn = firstInt(c, { "intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size" });
    if (!model.hasDimensions())
        return { std::nullopt,
            "no layer count, hidden size and head count (num_hidden_layers/n_layer, "
            "hidden_size/n_embd, num_attention_heads/n_head)" };

    const std::string activation
        = text(c, "hidden_act").empty() ? text(c, "activation_function") : text(c, "hidden_act");
    model.gatedMlp = activation == "silu" || activation == "swiglu" || activation == "gelu_pytorch_tanh"
        || type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen2_moe"
        || type == "gemma" || type == "deepseek_v2" || type == "deepseek_v3";
    // Older architectures with learned positions and LayerNorm (with biases everywhere).
    const bool learnedPositions = type == "gpt2" || type == "opt" || type == "gpt_bigcode" || type == "bert";
    if (learnedPositions)
        model.positions = firstInt(c, { "n_positions", "max_position_embeddings" });
    model.layerNormBiases = learnedPositions || type == "gpt_neox" || type == "gptj" || type == "phi";
    // PretrainedConfig defaults tie_word_embeddings to true; LLaMA-style configs say false.
    const auto tied = c.find("tie_word_embeddings");
    model.tiedEmbeddings = tied == c.end() || !tied->is_boolean() || tied->get<bool>();
    readExperts(c, model);
    // A config is whatever a file says: dimensions beyond any model are a typo or not a model. Checked
    // on the whole model read, experts and latent attention included, in ModelSpec's one reckoning.
    if (const std::string problem = model.sizeProblem(); !problem.empty())
        return { std::nullopt, problem + " (a mistyped hidden_size, intermediate_size or layer count?)" };
    model.dropout = anyPositive(c,
        { "attn_pdrop", "resid_pdrop", "attention_dropout", "hidden_dropout", "hidden_dropout_prob",
            "attention_probs_dropout_prob", "dropout" });
    return { model, {} };
}

bool looksLikeHfConfig(std::string_view text)
{
    const size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos || text[start] != '{')
        return false;
    return modelFromHfConfig(text).model.has_value();
}

} // namespace oomlens::planner
