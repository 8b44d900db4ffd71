#include "parsers/text/servingfigures.h"

#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <array>
#include <cctype>
#include <cmath>
#include <string>

namespace oomlens::text {

namespace {

constexpr size_t maxCitedChars = 240;

bool isVersionChar(char c)
{
    return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' || c == '-'
        || c == '_';
}

// "0.6.4.post1" after a marker; a leading "v" is the tag's, not the version's.
std::string versionAfter(std::string_view text, std::string_view marker)
{
    const size_t at = text.find(marker);
    if (at == std::string_view::npos)
        return {};
    size_t pos = at + marker.size();
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '"'))
        ++pos;
    if (pos < text.size() && text[pos] == 'v')
        ++pos;
    size_t end = pos;
    while (end < text.size() && end - pos < 48 && isVersionChar(text[end]))
        ++end;
    std::string version(text.substr(pos, end - pos));
    while (!version.empty() && (version.back() == '.' || version.back() == '-'))
        version.pop_back();
    return !version.empty() && isDigit(version.front()) ? version : std::string();
}

struct VersionSign
{
    ServingEngine engine;
    std::string_view marker;
    std::string_view prefix; // put before the number: the library that dates a generate() or a pipeline
};

constexpr std::array<VersionSign, 9> versionSigns { {
    { ServingEngine::Vllm, "LLM engine (v", "" },
    { ServingEngine::Vllm, "vLLM API server version ", "" },
    { ServingEngine::Vllm, "vLLM version ", "" },
    { ServingEngine::Vllm, "vllm==", "" },
    { ServingEngine::Sglang, "sglang==", "" },
    { ServingEngine::Tgi, "text-generation-launcher ", "" },
    { ServingEngine::HfGenerate, "\"transformers_version\": ", "transformers " },
    { ServingEngine::HfGenerate, "transformers==", "transformers " },
    { ServingEngine::Diffusers, "diffusers==", "diffusers " },
} };

void addFigure(ServingRun& run, std::string_view key, std::optional<int64_t> bytes, const RawLine& line)
{
    if (bytes)
        run.figures.push_back({ std::string(key), *bytes, line.cite() });
}

void addSetting(ServingRun& run, std::string_view key, std::optional<double> value, const RawLine& line)
{
    if (value)
        run.settings.push_back({ std::string(key), *value, line.cite() });
}

// The settings an engine's flags, its config dump or its arguments name, under one spelling
// (underscores): --max-model-len 4096, max_seq_len=4096, max_batch_prefill_tokens: 4096.
struct SettingName
{
    std::string_view spelled;
    std::string_view key;
};

constexpr std::array<SettingName, 24> settingNames { {
    { "max_model_len", "max_model_len" },
    { "max_seq_len", "max_model_len" },
    { "max_num_seqs", "max_num_seqs" },
    { "max_num_batched_tokens", "max_num_batched_tokens" },
    { "gpu_memory_utilization", "gpu_memory_utilization" },
    { "tensor_parallel_size", "tensor_parallel_size" },
    { "mem_fraction_static", "mem_fraction_static" },
    { "max_total_num_tokens", "kv_cache_tokens" },
    { "max_total_tokens", "max_total_tokens" },
    { "chunked_prefill_size", "chunked_prefill_size" },
    { "max_prefill_tokens", "max_prefill_tokens" },
    { "max_running_requests", "max_running_requests" },
    { "context_len", "context_length" },
    { "context_length", "context_length" },
    { "max_batch_prefill_tokens", "max_batch_prefill_tokens" },
    { "max_batch_total_tokens", "max_batch_total_tokens" },
    { "max_input_tokens", "max_input_tokens" },
    { "max_input_length", "max_input_tokens" },
    { "cuda_memory_fraction", "cuda_memory_fraction" },
    { "max_batch_size", "max_batch_size" },
    { "max_input_len", "max_input_len" },
    { "max_num_tokens", "max_num_tokens" },
    { "max_new_tokens", "max_new_tokens" },
    { "num_beams", "num_beams" },
} };

// After the name: "=", ": " (TGI's Args dump, with Rust's "Some(" around optional values) or a
// flag's space. The name must start a word, so "model_max_seq_len" is not "max_seq_len".
std::optional<double> valueAfterName(std::string_view text, size_t nameEnd)
{
    size_t pos = nameEnd;
    if (pos < text.size() && (text[pos] == '=' || text[pos] == ':'))
        ++pos;
    else if (pos >= text.size() || text[pos] != ' ')
        return std::nullopt;
    while (pos < text.size() && text[pos] == ' ')
        ++pos;
    if (text.substr(pos).starts_with("Some("))
        pos += 5;
    return numberAt(text, pos);
}

void readSettingNames(const RawLine& line, ServingRun& run)
{
    std::string normalized(line.content);
    for (char& c : normalized)
        c = c == '-' ? '_' : c;
    for (const SettingName& name : settingNames) {
        size_t at = normalized.find(name.spelled);
        while (at != std::string::npos) {
            const auto wordChar = [&](size_t i) {
                return std::isalnum(static_cast<unsigned char>(normalized[i])) != 0 || normalized[i] == '_';
            };
            const size_t end = at + name.spelled.size();
            const bool wordStart = at == 0 || !std::isalnum(static_cast<unsigned char>(normalized[at - 1]));
            if (wordStart && (end >= normalized.size() || !wordChar(end))) {
                if (const auto value = valueAfterName(normalized, end)) {
                    addSetting(run, name.key, value, line);
                    break;
                }
            }
            at = normalized.find(name.spelled, at + 1);
        }
    }
}

// vLLM's start-up accounting, V0 and V1 (worker.py, gpu_worker.py, kv_cache_utils.py, mem_utils.py).
void readVllmLine(const RawLine& line, ServingRun& run)
{
    const std::string_view s = line.content;
    addFigure(run, "weights", bytesAfter(s, "Loading model weights took"), line);
    addFigure(run, "weights", bytesAfter(s, "Model loading took"), line);
    addFigure(run, "weights", bytesAfter(s, "model weights take"), line);
    addFigure(run, "weights", bytesAfter(s, "weights memory:"), line);
    if (contains(s, "total_gpu_memory (") && contains(s, "gpu_memory_utilization (")) {
        addFigure(run, "card_total", bytesAfter(s, "total_gpu_memory ("), line);
        addSetting(run, "gpu_memory_utilization", numberAfter(s, "gpu_memory_utilization ("), line);
        addFigure(run, "budget", bytesAfter(s, ") = "), line);
    }
    addFigure(run, "card_total", bytesAfter(s, "total_gpu_memory="), line);
    addFigure(run, "non_torch", bytesAfter(s, "non_torch_memory takes"), line);
    addFigure(run, "non_torch", bytesAfter(s, "non-torch forward increase memory:"), line);
    addFigure(run, "non_torch", bytesAfter(s, "non_torch_memory="), line);
    addFigure(run, "activation_peak", bytesAfter(s, "PyTorch activation peak memory takes"), line);
    addFigure(run, "activation_peak", bytesAfter(s, "torch peak memory increase:"), line);
    addFigure(run, "non_kv_total", bytesAfter(s, "Total non KV cache memory:"), line);
    addFigure(run, "kv_cache", bytesAfter(s, "the rest of the memory reserved for KV Cache is"), line);
    addFigure(run, "kv_cache", bytesAfter(s, "Available KV cache memory:"), line);
    addFigure(run, "kv_cache", bytesAfter(s, "kv_cache_size="), line);
    addSetting(run, "kv_cache_tokens", numberAfter(s, "KV cache size:"), line);
    addSetting(run, "max_model_len", numberAfter(s, "Maximum concurrency for"), line);
    if (const size_t at = s.find("tokens per request:"); at != std::string_view::npos)
        addSetting(run, "max_concurrency", numberAt(s, at + 19), line);
    addSetting(run, "gpu_blocks", numberAfter(s, "# GPU blocks:"), line);
    addSetting(run, "gpu_blocks", numberAfter(s, "# cuda blocks:"), line);
    if (contains(s, "Graph capturing finished"))
        addFigure(run, "graphs", bytesAfter(s, "took"), line);
    if (contains(s, "is larger than the maximum number of tokens that can be stored in KV cache")) {
        addSetting(run, "max_model_len", numberAfter(s, "max seq len ("), line);
        addSetting(run, "kv_cache_tokens", numberAfter(s, "stored in KV cache ("), line);
    }
    if (contains(s, "warming up sampler with"))
        addSetting(run, "max_num_seqs", numberAfter(s, "warming up sampler with"), line);
    if (const size_t at = s.find("Free memory on device"); at != std::string_view::npos) {
        const size_t open = s.find('(', at);
        size_t end = 0;
        if (open != std::string_view::npos) {
            const auto free = numberAt(s, open + 1, &end);
            if (free && end < s.size() && s[end] == '/') {
                const auto total = bytesAt(s, end + 1);
                if (total && *free >= 0) {
                    const double unit = static_cast<double>(*total) / std::max(1e-9, *numberAt(s, end + 1));
                    addFigure(run, "card_total", total, line);
                    addFigure(run, "card_free", static_cast<int64_t>(std::llround(*free * unit)), line);
                }
            }
        }
        if (const size_t wish = s.find("memory utilization ("); wish != std::string_view::npos) {
            size_t after = 0;
            addSetting(run, "gpu_memory_utilization", numberAt(s, wish + 20, &after), line);
            if (after < s.size() && s[after] == ',')
                addFigure(run, "budget", bytesAt(s, after + 1), line);
        }
    }
}

// SGLang's model runner and memory pool (model_runner.py, memory_pool.py, cuda_graph_runner.py).
void readSglangLine(const RawLine& line, ServingRun& run)
{
    const std::string_view s = line.content;
    if (contains(s, "Load weight end.")) {
        addFigure(run, "weights", bytesAfter(s, "mem usage="), line);
        addFigure(run, "free_after_weights", bytesAfter(s, "avail mem="), line);
    }
    if (contains(s, "KV Cache is allocated.")) {
        addSetting(run, "kv_cache_tokens", numberAfter(s, "#tokens:"), line);
        const auto k = bytesAfter(s, "K size:");
        const auto v = bytesAfter(s, "V size:");
        if (k && v)
            addFigure(run, "kv_cache", *k + *v, line);
        addFigure(run, "kv_cache", bytesAfter(s, "KV size:"), line);
    }
    if (contains(s, "is larger than the profiled value"))
        addSetting(run, "kv_cache_tokens", numberAfter(s, "the profiled value"), line);
    if (contains(s, "Capture") && contains(s, "graph end"))
        addFigure(run, "graphs", bytesAfter(s, "mem usage="), line);
    if (contains(s, "Memory pool end."))
        addFigure(run, "left", bytesAfter(s, "avail mem="), line);
}

void readTgiLine(const RawLine& line, ServingRun& run)
{
    addSetting(run, "max_batch_total_tokens", numberAfter(line.content, "Setting max batch total tokens to"), line);
    if (contains(line.content, "Not enough memory to handle"))
        addSetting(run, "max_batch_prefill_tokens", numberAfter(line.content, "Not enough memory to handle"), line);
}

// What the engines' loggers put before a message, which the shared prefixes do not cover:
// vLLM V0's "INFO 02-26 09:54:05 worker.py:267] ", SGLang's "[2025-07-02 07:41:58 DP0 TP0] ",
// TGI's "2023-09-26T21:48:00.969072Z ERROR text_generation_launcher: ".
std::string_view withoutEngineLogPrefix(std::string_view content)
{
    for (std::string_view level : { "INFO ", "WARNING ", "ERROR ", "DEBUG " }) {
        if (!content.starts_with(level) || content.size() <= level.size() || !isDigit(content[level.size()]))
            continue;
        const size_t close = content.find("] ");
        if (close != std::string_view::npos && close < 80 && contains(content.substr(0, close), ".py:"))
            return trimmedLeft(content.substr(close + 2));
    }
    if (content.starts_with("[")) {
        const size_t close = content.find("] ");
        if (close != std::string_view::npos && close < 64 && contains(content.substr(0, close), " TP"))
            return trimmedLeft(content.substr(close + 2));
    }
    if (!content.empty() && isDigit(content[0])) {
        const size_t target = content.find(" text_generation_");
        const size_t colon = target == std::string_view::npos ? target : content.find(": ", target);
        if (target != std::string_view::npos && target < 48 && colon != std::string_view::npos)
            return trimmedLeft(content.substr(colon + 2));
    }
    return content;
}

} // namespace

ServingLine RawLine::cite() const
{
    std::string text = sanitizedUtf8(content.substr(0, maxCitedChars));
    if (content.size() > maxCitedChars)
        text += "…";
    return { number, std::move(text) };
}

std::vector<RawLine> rawLines(std::string_view input)
{
    std::vector<RawLine> lines;
    size_t begin = 0;
    while (begin <= input.size()) {
        size_t end = input.find('\n', begin);
        if (end == std::string_view::npos)
            end = input.size();
        const std::string_view raw = input.substr(begin, end - begin);
        lines.push_back({ lines.size() + 1, raw, withoutEngineLogPrefix(trimmed(strippedLinePrefixes(raw))) });
        if (end == input.size())
            break;
        begin = end + 1;
    }
    return lines;
}

std::optional<double> numberAt(std::string_view text, size_t pos, size_t* end)
{
    while (pos < text.size() && text[pos] == ' ')
        ++pos;
    const bool negative = pos < text.size() && text[pos] == '-';
    if (negative)
        ++pos;
    if (pos >= text.size() || !isDigit(text[pos]))
        return std::nullopt;
    double value = 0;
    // A thousands separator is a comma with three digits after it ("150,745"), not a list's comma.
    const auto thousands = [&](size_t i) {
        return text[i] == ',' && i + 3 < text.size() && isDigit(text[i + 1]) && isDigit(text[i + 2])
            && isDigit(text[i + 3]);
    };
    while (pos < text.size() && (isDigit(text[pos]) || thousands(pos))) {
        if (text[pos] != ',')
            value = value * 10 + (text[pos] - '0');
        ++pos;
    }
    if (pos + 1 < text.size() && text[pos] == '.' && isDigit(text[pos + 1])) {
        double scale = 0.1;
        for (++pos; pos < text.size() && isDigit(text[pos]); ++pos, scale /= 10)
            value += (text[pos] - '0') * scale;
    }
    if (end)
        *end = pos;
    return negative ? -value : value;
}

std::optional<double> numberAfter(std::string_view text, std::string_view marker)
{
    const size_t at = text.find(marker);
    return at == std::string_view::npos ? std::nullopt : numberAt(text, at + marker.size());
}

std::optional<int64_t> bytesAt(std::string_view text, size_t pos, size_t* end)
{
    size_t after = 0;
    const auto value = numberAt(text, pos, &after);
    if (!value)
        return std::nullopt;
    while (after < text.size() && text[after] == ' ')
        ++after;
    size_t unitEnd = after;
    while (unitEnd < text.size()
        && ((text[unitEnd] >= 'a' && text[unitEnd] <= 'z') || (text[unitEnd] >= 'A' && text[unitEnd] <= 'Z')))
        ++unitEnd;
    const uint64_t unit = unitMultiplier(text.substr(after, unitEnd - after));
    if (unit == 0 || std::abs(*value) > 1e6)
        return std::nullopt;
    if (end)
        *end = unitEnd;
    return static_cast<int64_t>(std::llround(*value * static_cast<double>(unit)));
}

std::optional<int64_t> bytesAfter(std::string_view text, std::string_view marker)
{
    const size_t at = text.find(marker);
    return at == std::string_view::npos ? std::nullopt : bytesAt(text, at + marker.size());
}

void readVersion(const std::vector<RawLine>& lines, ServingRun& run)
{
    for (const RawLine& line : lines) {
        for (const VersionSign& sign : versionSigns) {
            if (sign.engine != run.engine)
                continue;
            if (std::string version = versionAfter(line.raw, sign.marker); !version.empty()) {
                run.version = std::string(sign.prefix) + version;
                run.versionEvidence = line.cite();
                return;
            }
        }
    }
}

void readFigures(const std::vector<RawLine>& lines, ServingRun& run)
{
    bool v1 = false;
    bool v0 = false;
    for (const RawLine& line : lines) {
        v1 = v1 || contains(line.raw, "vllm/v1/") || contains(line.raw, "(EngineCore")
            || contains(line.raw, "(VllmWorker rank=") || contains(line.raw, "V1 LLM engine");
        v0 = v0 || contains(line.raw, "vllm/worker/") || contains(line.raw, "vllm/engine/")
            || contains(line.raw, "VllmWorkerProcess") || contains(line.raw, "V0 LLM engine")
            || contains(line.raw, "# cuda blocks:");
        readSettingNames(line, run);
        switch (run.engine) {
        case ServingEngine::Vllm:
            readVllmLine(line, run);
            break;
        case ServingEngine::Sglang:
            readSglangLine(line, run);
            break;
        case ServingEngine::Tgi:
            readTgiLine(line, run);
            break;
        default:
            break;
        }
    }
    if (run.engine == ServingEngine::Vllm && (v1 || v0))
        run.generation = v1 ? "V1" : "V0";
}

} // namespace oomlens::text
