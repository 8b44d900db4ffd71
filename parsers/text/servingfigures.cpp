#include "parsers/text/servingfigures.h"

#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <algorithm>
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

void addFigure(ServingRun& run, std::string_view key, int64_t bytes, ServingLine source)
{
    run.figures.push_back({ std::string(key), bytes, std::move(source) });
}

void addSetting(ServingRun& run, std::string_view key, double value, ServingLine source)
{
    run.settings.push_back({ std::string(key), value, std::move(source) });
}

// The figure printed after `marker` ("Model loading took 14.99 GiB"): its bytes, quoted from the
// marker to the unit. `quoteFrom` starts the quote earlier where the marker alone does not say
// what the figure is ("took" of "Graph capturing finished in 5 secs, took 0.46 GiB").
void figureAfter(ServingRun& run, std::string_view key, const RawLine& line, std::string_view marker,
    std::optional<size_t> quoteFrom = std::nullopt)
{
    const size_t at = line.content.find(marker);
    if (at == std::string_view::npos)
        return;
    size_t end = 0;
    if (const auto bytes = bytesAt(line.content, at + marker.size(), &end))
        addFigure(run, key, *bytes, line.quote(quoteFrom.value_or(at), end));
}

void settingAfter(ServingRun& run, std::string_view key, const RawLine& line, std::string_view marker,
    std::optional<size_t> quoteFrom = std::nullopt)
{
    const size_t at = line.content.find(marker);
    if (at == std::string_view::npos)
        return;
    size_t end = 0;
    if (const auto value = numberAt(line.content, at + marker.size(), &end))
        addSetting(run, key, *value, line.quote(quoteFrom.value_or(at), end));
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
std::optional<double> valueAfterName(std::string_view text, size_t nameEnd, size_t* valueEnd)
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
    return numberAt(text, pos, valueEnd);
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
                size_t valueEnd = 0;
                if (const auto value = valueAfterName(normalized, end, &valueEnd)) {
                    addSetting(run, name.key, *value,
                        line.quote(at >= 2 && line.content.substr(at - 2, 2) == "--" ? at - 2 : at, valueEnd));
                    break;
                }
            }
            at = normalized.find(name.spelled, at + 1);
        }
    }
}

// V1's init_device (v1/worker/gpu_worker.py): "Free memory on device (F/T GiB) on startup is less
// than desired GPU memory utilization (U, R GiB)": the card, what was free, the share and its bytes.
void readStartupFreeMemory(const RawLine& line, size_t at, ServingRun& run)
{
    const std::string_view s = line.content;
    const size_t open = s.find('(', at);
    size_t end = 0;
    if (open != std::string_view::npos) {
        const auto free = numberAt(s, open + 1, &end);
        if (free && *free >= 0 && end < s.size() && s[end] == '/') {
            const size_t totalAt = end + 1;
            size_t totalEnd = 0;
            const auto total = bytesAt(s, totalAt, &totalEnd);
            const auto totalNumber = numberAt(s, totalAt);
            if (total && totalNumber && *totalNumber > 0) {
                const double unit = static_cast<double>(*total) / *totalNumber;
                addFigure(run, "card_total", *total, line.quote(at, totalEnd));
                addFigure(run, "card_free", static_cast<int64_t>(std::llround(*free * unit)), line.quote(at, totalEnd));
            }
        }
    }
    if (const size_t wish = s.find("memory utilization ("); wish != std::string_view::npos) {
        size_t after = 0;
        const auto share = numberAt(s, wish + 20, &after);
        if (!share)
            return;
        const size_t quoteFrom
            = s.rfind("desired GPU", wish) != std::string_view::npos ? s.rfind("desired GPU", wish) : wish;
        addSetting(run, "gpu_memory_utilization", *share, line.quote(quoteFrom, after));
        size_t bytesEnd = 0;
        if (after < s.size() && s[after] == ',')
            if (const auto bytes = bytesAt(s, after + 1, &bytesEnd))
                addFigure(run, "budget", *bytes, line.quote(quoteFrom, bytesEnd));
    }
}

// vLLM's start-up accounting, V0 and V1 (worker.py, gpu_worker.py, kv_cache_utils.py, mem_utils.py).
void readVllmLine(const RawLine& line, ServingRun& run)
{
    const std::string_view s = line.content;
    figureAfter(run, "weights", line, "Loading model weights took");
    figureAfter(run, "weights", line, "Model loading took");
    figureAfter(run, "weights", line, "model weights take");
    figureAfter(run, "weights", line, "weights memory:");
    if (contains(s, "total_gpu_memory (") && contains(s, "gpu_memory_utilization (")) {
        figureAfter(run, "card_total", line, "total_gpu_memory (");
        settingAfter(run, "gpu_memory_utilization", line, "gpu_memory_utilization (");
        figureAfter(run, "budget", line, ") = ", s.find("total_gpu_memory ("));
    }
    figureAfter(run, "card_total", line, "total_gpu_memory=");
    figureAfter(run, "non_torch", line, "non_torch_memory takes");
    figureAfter(run, "non_torch", line, "non-torch forward increase memory:");
    figureAfter(run, "non_torch", line, "non_torch_memory=");
    figureAfter(run, "activation_peak", line, "PyTorch activation peak memory takes");
    figureAfter(run, "activation_peak", line, "torch peak memory increase:");
    figureAfter(run, "non_kv_total", line, "Total non KV cache memory:");
    figureAfter(run, "kv_cache", line, "the rest of the memory reserved for KV Cache is");
    figureAfter(run, "kv_cache", line, "Available KV cache memory:");
    figureAfter(run, "kv_cache", line, "kv_cache_size=");
    if (const size_t tokens = s.find("KV cache size:"); tokens != std::string_view::npos)
        settingAfter(run, "kv_cache_tokens", line,
            "KV cache size:", s.rfind("GPU ", tokens) == tokens - 4 ? tokens - 4 : tokens);
    settingAfter(run, "max_model_len", line, "Maximum concurrency for");
    settingAfter(run, "max_concurrency", line, "tokens per request:", s.find("Maximum concurrency for"));
    settingAfter(run, "gpu_blocks", line, "# GPU blocks:");
    settingAfter(run, "gpu_blocks", line, "# cuda blocks:");
    if (const size_t graphs = s.find("Graph capturing finished"); graphs != std::string_view::npos)
        figureAfter(run, "graphs", line, "took", graphs);
    if (contains(s, "is larger than the maximum number of tokens that can be stored in KV cache")) {
        settingAfter(run, "max_model_len", line, "max seq len (");
        settingAfter(run, "kv_cache_tokens", line, "stored in KV cache (");
    }
    // V1's check_enough_kv_cache_memory (v1/core/kv_cache_utils.py): "To serve at least one request
    // with the models's max seq len (N), (X GiB KV cache is needed, which is larger than the
    // available KV cache memory (Y GiB). Based on the available memory, the estimated maximum model
    // length is M."
    if (const size_t needed = s.find("KV cache is needed"); needed != std::string_view::npos) {
        settingAfter(run, "max_model_len", line, "max seq len (");
        const size_t open = s.rfind('(', needed);
        if (open != std::string_view::npos) {
            size_t end = 0;
            if (const auto bytes = bytesAt(s, open + 1, &end); bytes && end <= needed)
                addFigure(run, "kv_cache_needed", *bytes, line.quote(open + 1, needed + 18));
        }
        figureAfter(run, "kv_cache", line, "available KV cache memory (");
        settingAfter(run, "estimated_max_model_len", line, "the estimated maximum model length is");
    }
    settingAfter(run, "max_num_seqs", line, "warming up sampler with");
    if (const size_t at = s.find("Free memory on device"); at != std::string_view::npos)
        readStartupFreeMemory(line, at, run);
}

// SGLang's model runner and memory pool (model_runner.py, memory_pool.py, cuda_graph_runner.py).
void readSglangLine(const RawLine& line, ServingRun& run)
{
    const std::string_view s = line.content;
    if (contains(s, "Load weight end.")) {
        figureAfter(run, "weights", line, "mem usage=");
        figureAfter(run, "free_after_weights", line, "avail mem=");
    }
    if (contains(s, "KV Cache is allocated.")) {
        settingAfter(run, "kv_cache_tokens", line, "#tokens:");
        const size_t kAt = s.find("K size:");
        const size_t vAt = s.find("V size:");
        size_t kEnd = 0;
        size_t vEnd = 0;
        const auto k = kAt == std::string_view::npos ? std::nullopt : bytesAt(s, kAt + 7, &kEnd);
        const auto v = vAt == std::string_view::npos ? std::nullopt : bytesAt(s, vAt + 7, &vEnd);
        if (k && v)
            addFigure(run, "kv_cache", *k + *v, line.quote(kAt, vEnd));
        figureAfter(run, "kv_cache", line, "KV size:");
    }
    if (contains(s, "is larger than the profiled value"))
        settingAfter(run, "kv_cache_tokens", line, "the profiled value", 0);
    if (contains(s, "Capture") && contains(s, "graph end"))
        figureAfter(run, "graphs", line, "mem usage=");
    if (contains(s, "Memory pool end."))
        figureAfter(run, "left", line, "avail mem=");
}

void readTgiLine(const RawLine& line, ServingRun& run)
{
    settingAfter(run, "max_batch_total_tokens", line, "Setting max batch total tokens to");
    if (contains(line.content, "Not enough memory to handle"))
        settingAfter(run, "max_batch_prefill_tokens", line, "Not enough memory to handle");
}

// TensorRT's runtime logs the serialized engine it deserializes ("Loaded engine size: 134597 MiB");
// a TensorRT-LLM engine's plan is its weights (the kernels are a few MiB).
void readTensorRtLine(const RawLine& line, ServingRun& run)
{
    figureAfter(run, "weights", line, "Loaded engine size:");
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

namespace {

// "Load weight end." of "Load weight end. type=…, avail mem=…": a short first sentence that names
// what the line reports; 0 when the line has none.
size_t leadSentenceEnd(std::string_view text)
{
    constexpr size_t longestLead = 40;
    const size_t stop = text.find(". ");
    if (stop == std::string_view::npos || stop + 1 > longestLead)
        return 0;
    const std::string_view lead = text.substr(0, stop);
    return std::any_of(lead.begin(), lead.end(), [](char c) { return isDigit(c); }) ? 0 : stop + 1;
}

} // namespace

ServingLine RawLine::quote(size_t begin, size_t end) const
{
    const std::string_view s = content;
    end = std::min(end, s.size());
    begin = std::min(begin, end);
    // A parenthesis the quote opened closes in it: "total_gpu_memory (39.38GiB)".
    const std::string_view body = s.substr(begin, end - begin);
    if (end < s.size() && s[end] == ')'
        && std::count(body.begin(), body.end(), '(') > std::count(body.begin(), body.end(), ')'))
        ++end;
    std::string text;
    if (begin > 0) {
        const size_t lead = leadSentenceEnd(s);
        if (lead > 0 && lead <= begin) {
            text = std::string(s.substr(0, lead));
            text += trimmed(s.substr(lead, begin - lead)).empty() ? " " : " … ";
        } else {
            text = "… ";
        }
    }
    text += s.substr(begin, end - begin);
    const std::string_view rest = s.substr(end);
    if (rest.find_first_not_of(" .,;)") != std::string_view::npos)
        text += " …";
    if (text.size() > maxCitedChars)
        text = text.substr(0, maxCitedChars) + "…";
    return { number, sanitizedUtf8(text) };
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
            || contains(line.raw, "(VllmWorker rank=")
            || contains(line.raw, "V1 LLM engine")
            // Said only by V1's engine core (v1/engine/core.py) and its byte check of the cache.
            || contains(line.raw, "EngineCore failed to start")
            || contains(line.raw, "KV cache is needed, which is larger than the available KV cache memory");
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
        case ServingEngine::TensorRtLlm:
            readTensorRtLine(line, run);
            break;
        default:
            break;
        }
    }
    if (run.engine == ServingEngine::Vllm && (v1 || v0))
        run.generation = v1 ? "V1" : "V0";
}

} // namespace oomlens::text
