#include "core/diagnosis/fixladderlora.h"

#include "core/snapshot.h"
#include "core/strings.h"
#include "core/textinputs.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace oomlens {

namespace {

struct ArchitectureTargets
{
    std::string_view modelType; // the directory under transformers/models/ and the modeling_ file's stem
    std::string_view modules;
    std::string_view taskType;
};

// The attention projections LoRA wraps, by Hugging Face model type: PEFT's own defaults
// (peft/utils/constants.py, TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING) and the same
// layer names in the architectures that share Llama's attention.
constexpr std::string_view qv = R"(["q_proj", "v_proj"])";
constexpr std::array architectures {
    ArchitectureTargets { "llama", qv, "CAUSAL_LM" },
    ArchitectureTargets { "mistral", qv, "CAUSAL_LM" },
    ArchitectureTargets { "mixtral", qv, "CAUSAL_LM" },
    ArchitectureTargets { "qwen2", qv, "CAUSAL_LM" },
    ArchitectureTargets { "qwen2_moe", qv, "CAUSAL_LM" },
    ArchitectureTargets { "qwen3", qv, "CAUSAL_LM" },
    ArchitectureTargets { "qwen3_moe", qv, "CAUSAL_LM" },
    ArchitectureTargets { "gemma", qv, "CAUSAL_LM" },
    ArchitectureTargets { "gemma2", qv, "CAUSAL_LM" },
    ArchitectureTargets { "gemma3", qv, "CAUSAL_LM" },
    ArchitectureTargets { "phi", qv, "CAUSAL_LM" },
    ArchitectureTargets { "olmo", qv, "CAUSAL_LM" },
    ArchitectureTargets { "olmo2", qv, "CAUSAL_LM" },
    ArchitectureTargets { "stablelm", qv, "CAUSAL_LM" },
    ArchitectureTargets { "starcoder2", qv, "CAUSAL_LM" },
    ArchitectureTargets { "opt", qv, "CAUSAL_LM" },
    ArchitectureTargets { "gptj", qv, "CAUSAL_LM" },
    ArchitectureTargets { "gpt_neo", qv, "CAUSAL_LM" },
    ArchitectureTargets { "bart", qv, "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "mbart", qv, "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "marian", qv, "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "pegasus", qv, "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "whisper", qv, "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "clip", qv, "" },
    ArchitectureTargets { "siglip", qv, "" },
    ArchitectureTargets { "phi3", R"(["qkv_proj"])", "CAUSAL_LM" },
    ArchitectureTargets { "gpt2", R"(["c_attn"])", "CAUSAL_LM" },
    ArchitectureTargets { "gpt_bigcode", R"(["c_attn"])", "CAUSAL_LM" },
    ArchitectureTargets { "bloom", R"(["query_key_value"])", "CAUSAL_LM" },
    ArchitectureTargets { "gpt_neox", R"(["query_key_value"])", "CAUSAL_LM" },
    ArchitectureTargets { "falcon", R"(["query_key_value"])", "CAUSAL_LM" },
    ArchitectureTargets { "chatglm", R"(["query_key_value"])", "CAUSAL_LM" },
    ArchitectureTargets { "mpt", R"(["Wqkv"])", "CAUSAL_LM" },
    ArchitectureTargets { "t5", R"(["q", "v"])", "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "mt5", R"(["q", "v"])", "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "umt5", R"(["q", "v"])", "SEQ_2_SEQ_LM" },
    ArchitectureTargets { "bert", R"(["query", "value"])", "" },
    ArchitectureTargets { "roberta", R"(["query", "value"])", "" },
    ArchitectureTargets { "xlm_roberta", R"(["query", "value"])", "" },
    ArchitectureTargets { "electra", R"(["query", "value"])", "" },
    ArchitectureTargets { "layoutlm", R"(["query", "value"])", "" },
    ArchitectureTargets { "vit", R"(["query", "value"])", "" },
    ArchitectureTargets { "dinov2", R"(["query", "value"])", "" },
    ArchitectureTargets { "distilbert", R"(["q_lin", "v_lin"])", "" },
    ArchitectureTargets { "deberta_v2", R"(["query_proj", "value_proj"])", "" },
    ArchitectureTargets { "deberta", R"(["in_proj"])", "" },
};

std::string lowered(std::string_view text)
{
    std::string result(text);
    std::transform(result.begin(), result.end(), result.begin(),
        [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return result;
}

// "llama" from ".../transformers/models/llama/modeling_llama.py", or from a remote-code model's
// ".../transformers_modules/<repo>/modeling_chatglm.py"; empty for any other file.
std::string_view transformersModelType(std::string_view file)
{
    if (!contains(file, "transformers/models/") && !contains(file, "transformers_modules/"))
        return {};
    const size_t slash = file.find_last_of("/\\");
    std::string_view name = slash == std::string_view::npos ? file : file.substr(slash + 1);
    if (!name.starts_with("modeling_") || !name.ends_with(".py"))
        return {};
    name.remove_prefix(std::string_view("modeling_").size());
    name.remove_suffix(3);
    return name;
}

std::string baseName(std::string_view file)
{
    const size_t slash = file.find_last_of("/\\");
    return std::string(slash == std::string_view::npos ? file : file.substr(slash + 1));
}

LoraTarget transformersTarget(std::string_view type, std::string_view file)
{
    const std::string evidence = "transformers' " + baseName(file) + " in the stacks";
    for (const ArchitectureTargets& architecture : architectures) {
        if (architecture.modelType == type)
            return { std::string(architecture.modules), std::string(architecture.taskType), evidence, true };
    }
    // A Hugging Face model of a type without a known default: PEFT adapts every linear layer of a
    // PreTrainedModel but its output head.
    return { "\"all-linear\"", "", evidence, true };
}

// What the frames show of the model, strongest first: a Hugging Face architecture names its
// layers; diffusers' and timm's attention name theirs; a model's own code with attention over
// nn.Linear layers is adapted through those layers, whatever it calls them.
struct Seen
{
    std::string_view transformersType, transformersFile;
    std::string_view transformersLibrary; // transformers' own modeling_utils.py or trainer.py
    bool diffusersAttention = false, timmVit = false, linear = false, attention = false;
};

Seen seenIn(const std::vector<ModelFrame>& frames)
{
    Seen seen;
    for (const ModelFrame& frame : frames) {
        if (const std::string_view type = transformersModelType(frame.file);
            !type.empty() && seen.transformersType.empty()) {
            seen.transformersType = type;
            seen.transformersFile = frame.file;
        }
        if (seen.transformersLibrary.empty()
            && (frame.file.ends_with("transformers/modeling_utils.py")
                || frame.file.ends_with("transformers/trainer.py")))
            seen.transformersLibrary = frame.file;
        seen.diffusersAttention = seen.diffusersAttention
            || (contains(frame.file, "diffusers/models/") && contains(frame.file, "attention"));
        seen.timmVit = seen.timmVit || contains(frame.file, "timm/models/vision_transformer");
        seen.linear = seen.linear || frame.file.ends_with("torch/nn/modules/linear.py");
        const std::string function = lowered(frame.function);
        seen.attention = seen.attention || contains(function, "attn") || contains(function, "attention")
            || contains(lowered(frame.file), "attention");
    }
    return seen;
}

} // namespace

LoraTarget loraTargetOf(const std::vector<ModelFrame>& frames)
{
    const Seen seen = seenIn(frames);
    if (!seen.transformersType.empty())
        return transformersTarget(seen.transformersType, seen.transformersFile);
    // Loaded or trained by transformers itself (from_pretrained, Trainer): a PreTrainedModel, whose
    // linear layers PEFT finds by itself.
    if (!seen.transformersLibrary.empty())
        return { "\"all-linear\"", "", "transformers' " + baseName(seen.transformersLibrary) + " in the stacks", true };
    if (seen.diffusersAttention)
        return { R"(["to_q", "to_k", "to_v", "to_out.0"])", "", "diffusers' attention in the stacks" };
    if (seen.timmVit)
        return { R"(["qkv"])", "", "timm's vision_transformer.py in the stacks" };
    if (seen.linear && seen.attention)
        return { "[name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]", "",
            "the model's own attention over nn.Linear layers in the stacks" };
    // Convolutions alone, linear layers without attention, or no frames of the model at all: no
    // adapter the inputs can name.
    return {};
}

LoraTarget loraTargetOf(const Snapshot& snapshot)
{
    std::vector<ModelFrame> frames;
    if (!snapshot.frames || !snapshot.strings)
        return {};
    frames.reserve(snapshot.frames->frameCount());
    for (size_t i = 0; i < snapshot.frames->frameCount(); ++i) {
        const Frame& frame = snapshot.frames->frame(FrameId(uint32_t(i)));
        frames.push_back({ snapshot.strings->get(frame.filename), snapshot.strings->get(frame.name) });
    }
    return loraTargetOf(frames);
}

LoraTarget loraTargetOf(const std::vector<const TracebackInfo*>& tracebacks)
{
    std::vector<ModelFrame> frames;
    for (const TracebackInfo* traceback : tracebacks) {
        for (const TracebackFrame& frame : traceback->frames)
            frames.push_back({ frame.filename, frame.function });
    }
    return loraTargetOf(frames);
}

} // namespace oomlens
