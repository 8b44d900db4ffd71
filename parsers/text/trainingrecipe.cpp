#include "parsers/text/trainingrecipe.h"

#include "core/strings.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>

namespace oomlens::text {

namespace {

constexpr size_t longestLine = 2000;
constexpr size_t evidenceLines = 4;
constexpr size_t evidenceChars = 160;

bool isWordChar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// `word` in `text` with no letter or digit touching it ('_', '-', '.' and spaces separate words):
// "amp" in "bf16 amp" and "amp_dtype", not in "timestamp".
bool hasWord(std::string_view text, std::string_view word)
{
    for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
        const size_t end = at + word.size();
        if ((at == 0 || !isWordChar(text[at - 1])) && (end >= text.size() || !isWordChar(text[end])))
            return true;
    }
    return false;
}

// "fp32"/"float32", "bf16"/"bfloat16", "fp16"/"float16"/"half", as the first word at `pos`.
std::string precisionAt(std::string_view text, size_t pos)
{
    const std::string_view rest = text.substr(std::min(pos, text.size()));
    for (const auto& [word, name] :
        { std::pair<std::string_view, const char*> { "fp32", "fp32" }, { "float32", "fp32" }, { "bf16", "bf16" },
            { "bfloat16", "bf16" }, { "fp16", "fp16" }, { "float16", "fp16" }, { "half", "fp16" } }) {
        if (rest.substr(0, word.size()) == word && (rest.size() == word.size() || !isWordChar(rest[word.size()])))
            return name;
    }
    return {};
}

// The precision just before `at`: "bf16 weights", "fp32 model".
std::string precisionBefore(std::string_view text, size_t at)
{
    size_t end = at;
    while (end > 0 && text[end - 1] == ' ')
        --end;
    size_t start = end;
    while (start > 0 && isWordChar(text[start - 1]))
        --start;
    return precisionAt(text.substr(0, end), start);
}

// The width of the weights: "fp32 weights", "weights in bf16", "torch_dtype=torch.bfloat16",
// "model.half()", Lightning's "bf16-true". autocast(dtype=...) is compute, not the weights.
std::string weightPrecision(std::string_view text)
{
    for (std::string_view noun : { "weights", "weight", "model", "params", "parameters" }) {
        for (size_t at = text.find(noun); at != std::string_view::npos; at = text.find(noun, at + 1)) {
            if (at > 0 && isWordChar(text[at - 1]))
                continue;
            if (auto before = precisionBefore(text, at); !before.empty())
                return before;
            size_t after = at + noun.size();
            for (std::string_view link : { " in ", ": ", " dtype: ", " dtype=", " dtype ", " = ", "=" }) {
                if (text.substr(after, link.size()) == link) {
                    after += link.size();
                    if (text.substr(after, 6) == "torch.")
                        after += 6;
                    if (auto named = precisionAt(text, after); !named.empty())
                        return named;
                }
            }
        }
    }
    if (!contains(text, "autocast")) {
        for (std::string_view key : { "torch_dtype=", "torch_dtype: ", "torch_dtype\": \"", "torch_dtype = " }) {
            if (const size_t at = text.find(key); at != std::string_view::npos) {
                size_t pos = at + key.size();
                if (text.substr(pos, 6) == "torch.")
                    pos += 6;
                if (auto named = precisionAt(text, pos); !named.empty())
                    return named;
            }
        }
    }
    if (contains(text, ".half()") || hasWord(text, "16-true"))
        return "fp16";
    if (contains(text, ".bfloat16()") || hasWord(text, "bf16-true") || contains(text, ".to(torch.bfloat16)"))
        return "bf16";
    if (contains(text, ".to(torch.float16)"))
        return "fp16";
    if (hasWord(text, "32-true") || contains(text, "precision=32") || contains(text, ".float()"))
        return "fp32";
    return {};
}

bool saysOff(std::string_view text, size_t at)
{
    const std::string_view rest = text.substr(at, 12);
    return contains(rest, "false") || contains(rest, "no") || contains(rest, "none");
}

// 16-bit compute over the weights: autocast, AMP, "mixed precision", Lightning's "16-mixed",
// the HF Trainer's fp16=True / bf16=True.
bool autocast(std::string_view text)
{
    if (hasWord(text, "autocast") || hasWord(text, "amp") || contains(text, "automatic mixed precision")
        || contains(text, "16-mixed") || hasWord(text, "--fp16") || hasWord(text, "--bf16"))
        return true;
    for (std::string_view key : { "mixed_precision", "mixed precision", "fp16=", "bf16=", "fp16: ", "bf16: " }) {
        const size_t at = text.find(key);
        if (at == std::string_view::npos || (at > 0 && isWordChar(text[at - 1])))
            continue;
        if (key.back() == '=' || key.back() == ' ') {
            if (text.substr(at + key.size(), 4) == "true")
                return true;
            continue;
        }
        if (!saysOff(text, at + key.size()))
            return true;
    }
    return false;
}

// An fp32 copy of 16-bit weights kept by the optimizer: DeepSpeed's fp16/bf16 engines, apex O2,
// or the words themselves.
bool masterWeights(std::string_view text)
{
    if (contains(text, "master weight") || contains(text, "master param") || contains(text, "master copy")
        || contains(text, "fp32 master") || contains(text, "bf16_optimizer") || contains(text, "fp16_optimizer"))
        return true;
    if (contains(text, "opt_level") && hasWord(text, "o2"))
        return true;
    for (std::string_view key :
        { "\"bf16\": {\"enabled\": true", "\"fp16\": {\"enabled\": true", "bf16.enabled=true", "fp16.enabled=true" }) {
        if (contains(text, key))
            return true;
    }
    return false;
}

// ZeRO's stage or FSDP: the state is split across the GPUs, a count of parameters is not per GPU.
std::string sharding(std::string_view text)
{
    const auto isStage = [](char c) { return c >= '1' && c <= '3'; };
    for (size_t at = text.find("zero"); at != std::string_view::npos; at = text.find("zero", at + 1)) {
        if (at > 0 && isWordChar(text[at - 1]))
            continue;
        // "zero3", "zero-2", "zero_3", "ZeRO stage 2", "zero_stage=3", "zero_optimization": {"stage": 3
        const std::string_view rest = text.substr(at + 4, 40);
        if (!rest.empty() && isStage(rest[0]) && (rest.size() == 1 || !isWordChar(rest[1])))
            return std::string("zero") + rest[0];
        if (rest.size() >= 2 && (rest[0] == '-' || rest[0] == '_' || rest[0] == ' ') && isStage(rest[1])
            && (rest.size() == 2 || !isWordChar(rest[2])))
            return std::string("zero") + rest[1];
        const size_t stage = rest.find("stage");
        if (stage != std::string_view::npos && stage <= 20) {
            for (size_t i = stage + 5; i < rest.size() && i < stage + 10; ++i) {
                if (isStage(rest[i]) && (i + 1 >= rest.size() || !isWordChar(rest[i + 1])))
                    return std::string("zero") + rest[i];
            }
            return "zero";
        }
        if (rest.starts_with("_optimization") || rest.starts_with(" offload") || rest.starts_with("-offload"))
            return "zero";
    }
    if (hasWord(text, "fsdp") || contains(text, "fullyshardeddataparallel"))
        return "fsdp";
    return {};
}

// Activation checkpointing as a recipe line sets it: HF's gradient_checkpointing=True (and the
// TrainingArguments dump, YAML "gradient_checkpointing: true", "--gradient_checkpointing"),
// model.gradient_checkpointing_enable(), torchtune's enable_activation_checkpointing, FSDP/Accelerate's
// activation_checkpointing, Megatron's --recompute-granularity full|selective / --recompute-activations
// and DeepSpeed's checkpoint_activations. nullopt: the line does not say; false: it says off.
std::optional<bool> activationCheckpointing(std::string_view text)
{
    // transformers warns "`use_cache=True` is incompatible with gradient checkpointing" only when
    // a model trains with it on.
    if (contains(text, "gradient_checkpointing_enable(") || contains(text, "checkpoint_wrapper(")
        || contains(text, "incompatible with gradient checkpointing"))
        return true;
    for (std::string_view key : { "gradient_checkpointing", "gradient-checkpointing", "activation_checkpointing",
             "activation-checkpointing", "recompute_granularity", "recompute-granularity", "recompute_activations",
             "recompute-activations", "checkpoint_activations", "checkpoint-activations" }) {
        for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
            const size_t end = at + key.size();
            // The key itself, not a longer one ("gradient_checkpointing_kwargs"); "enable_" or "use_"
            // before it still names the same setting.
            if ((at > 0 && isWordChar(text[at - 1]))
                || (end < text.size() && (isWordChar(text[end]) || text[end] == '_')))
                continue;
            size_t value = end;
            // Megatron prints its arguments as "recompute_granularity ....... full".
            while (value < text.size() && std::string_view(" \"':=.").find(text[value]) != std::string_view::npos)
                ++value;
            const std::string_view rest = text.substr(value);
            for (std::string_view on : { "true", "1", "yes", "on", "full", "selective", "enabled", "unsloth" }) {
                if (rest.starts_with(on) && (rest.size() == on.size() || !isWordChar(rest[on.size()])))
                    return true;
            }
            for (std::string_view off : { "false", "0", "no", "none", "off", "null", "disabled" }) {
                if (rest.starts_with(off) && (rest.size() == off.size() || !isWordChar(rest[off.size()])))
                    return false;
            }
            // A bare command-line flag: "--gradient_checkpointing" followed by another flag or nothing.
            const bool flag = at >= 2 && text.substr(at - 2, 2) == "--";
            if (flag && (rest.empty() || rest.starts_with("-")))
                return true;
        }
    }
    return std::nullopt;
}

void readOptimizer(std::string_view text, TrainingRecipe& said)
{
    const bool eightBit
        = contains(text, "8bit") || contains(text, "8-bit") || hasWord(text, "bnb") || contains(text, "bitsandbytes");
    if (contains(text, "adamw") || contains(text, "fusedadam")) {
        said.optimizer = eightBit ? "adamw-8bit" : "adamw";
    } else if (hasWord(text, "adam") || contains(text, "cpuadam")) {
        said.optimizer = eightBit ? "adamw-8bit" : "adam";
    } else if (contains(text, "adafactor")) {
        said.optimizer = "adafactor";
    } else if (hasWord(text, "sgd")) {
        said.optimizer = "sgd";
    } else if (hasWord(text, "lion") || contains(text, "lion_")) {
        said.optimizer = "lion";
    }
    if (contains(text, "cpuadam") || contains(text, "offload_optimizer") || contains(text, "offload optimizer")
        || contains(text, "optimizer offload"))
        said.optimizerVariant = "offload";
    else if (said.optimizer.empty())
        return;
    else if (contains(text, "paged"))
        said.optimizerVariant = "paged";
    else if (contains(text, "fused") && !contains(text, "fused=false"))
        said.optimizerVariant = "fused";
    else if (contains(text, "foreach") && !contains(text, "foreach=false"))
        said.optimizerVariant = "foreach";
}

// The evidence quotes the log's line, which may hold any bytes: cut on a character boundary and
// made valid UTF-8, as everything that reaches the JSON must be (the fuzz target `text` found a
// line of raw 0xb2 bytes that made dump() throw).
std::string quoted(std::string_view line)
{
    std::string_view text = trimmed(line);
    if (text.size() <= evidenceChars)
        return sanitizedUtf8(text);
    size_t cut = evidenceChars;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut; // not inside a multi-byte character
    return sanitizedUtf8(text.substr(0, cut)) + "...";
}

void merge(TrainingRecipe& into, const TrainingRecipe& said)
{
    if (!said.weightPrecision.empty())
        into.weightPrecision = said.weightPrecision;
    into.autocast = into.autocast || said.autocast;
    into.masterWeights = into.masterWeights || said.masterWeights;
    if (!said.optimizer.empty())
        into.optimizer = said.optimizer;
    if (!said.optimizerVariant.empty())
        into.optimizerVariant = said.optimizerVariant;
    if (!said.sharding.empty() && (into.sharding.empty() || said.sharding != "zero"))
        into.sharding = said.sharding;
    if (said.activationCheckpointing) {
        into.activationCheckpointing = said.activationCheckpointing;
        into.checkpointingEvidence = said.checkpointingEvidence;
    }
    for (const std::string& line : said.evidence) {
        if (std::find(into.evidence.begin(), into.evidence.end(), line) == into.evidence.end())
            into.evidence.push_back(line);
    }
}

// What the frames show ran, whatever the log said before.
TrainingRecipe recipeOfFrames(const TracebackInfo& traceback)
{
    TrainingRecipe ran;
    for (const TracebackFrame& frame : traceback.frames) {
        std::string file = frame.filename;
        std::replace(file.begin(), file.end(), '\\', '/');
        const std::string& function = frame.function;
        std::string optimizer;
        if (contains(file, "torch/optim/adamw.py") || function.starts_with("_fused_adamw")
            || function.starts_with("_multi_tensor_adamw") || function.starts_with("_single_tensor_adamw"))
            optimizer = "adamw";
        else if (contains(file, "torch/optim/adam.py"))
            optimizer = "adam";
        else if (contains(file, "torch/optim/sgd.py"))
            optimizer = "sgd";
        else if (contains(file, "adafactor"))
            optimizer = "adafactor";
        else if (contains(file, "bitsandbytes/optim/"))
            optimizer = "adamw-8bit";
        const bool said = !optimizer.empty();
        if (said)
            ran.optimizer = optimizer;
        if (function.starts_with("_fused_")) {
            ran.optimizerVariant = "fused";
        } else if (function.starts_with("_multi_tensor_")) {
            ran.optimizerVariant = "foreach";
        }
        bool shaped = false;
        if (contains(file, "deepspeed/runtime/zero/")) {
            ran.sharding = contains(file, "stage3") ? "zero3" : "zero";
            shaped = true;
        } else if (contains(file, "torch/distributed/fsdp/")) {
            ran.sharding = "fsdp";
            shaped = true;
        }
        if (contains(file, "deepspeed/runtime/bf16_optimizer.py") || contains(file, "deepspeed/runtime/fp16/")) {
            ran.masterWeights = true;
            shaped = true;
        }
        if (said || shaped || function.starts_with("_fused_") || function.starts_with("_multi_tensor_")) {
            const std::string where = "traceback: " + function + " in " + frame.filename;
            if (std::find(ran.evidence.begin(), ran.evidence.end(), where) == ran.evidence.end())
                ran.evidence.push_back(where);
        }
    }
    if (ran.evidence.size() > 1)
        ran.evidence.erase(ran.evidence.begin(), ran.evidence.end() - 1); // the innermost frame says it
    return ran;
}

} // namespace

std::vector<RecipeLine> findRecipeLines(const TextLines& lines)
{
    std::vector<RecipeLine> found;
    std::string text; // one buffer for every line: a training log has millions
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (line.size() > longestLine || contains(line, "File \"") || contains(line, "out of memory"))
            continue;
        text.assign(line);
        for (char& c : text) {
            if (c >= 'A' && c <= 'Z')
                c = static_cast<char>(c - 'A' + 'a'); // ASCII only: the words looked for are
        }
        RecipeLine recipe;
        recipe.lineIndex = i;
        recipe.said.weightPrecision = weightPrecision(text);
        recipe.said.autocast = autocast(text);
        recipe.said.masterWeights = masterWeights(text);
        recipe.said.sharding = sharding(text);
        readOptimizer(text, recipe.said);
        recipe.said.activationCheckpointing = activationCheckpointing(text);
        if (recipe.said.empty() && recipe.said.optimizerVariant.empty())
            continue;
        recipe.said.evidence.push_back("line " + std::to_string(lines.lineNumber(i)) + ": " + quoted(line));
        if (recipe.said.activationCheckpointing)
            recipe.said.checkpointingEvidence = "the log sets it, " + recipe.said.evidence.back();
        found.push_back(std::move(recipe));
    }
    return found;
}

TrainingRecipe recipeBefore(
    const std::vector<RecipeLine>& lines, size_t lineIndex, const std::optional<TracebackInfo>& traceback)
{
    TrainingRecipe recipe;
    for (const RecipeLine& line : lines) {
        if (line.lineIndex < lineIndex)
            merge(recipe, line.said);
    }
    if (recipe.evidence.size() > evidenceLines)
        recipe.evidence.erase(recipe.evidence.begin(), recipe.evidence.end() - evidenceLines);
    if (traceback)
        merge(recipe, recipeOfFrames(*traceback));
    return recipe;
}

} // namespace oomlens::text
