#pragma once

#include "core/planner/modelspec.h"

#include <string>
#include <string_view>

namespace oomlens::planner {

struct HfConfigResult
{
    std::optional<ModelSpec> model;
    std::string error; // set when model is empty
};

// A Hugging Face `config.json` (GPT-2's n_embd/n_layer/n_head and the LLaMA family's
// hidden_size/num_hidden_layers/num_attention_heads/num_key_value_heads spellings).
HfConfigResult modelFromHfConfig(std::string_view jsonText);

// True when the text is a JSON object with a transformer's dimensions: how a config.json is
// told apart from other JSON inputs by content, never by its name.
bool looksLikeHfConfig(std::string_view text);

} // namespace oomlens::planner
