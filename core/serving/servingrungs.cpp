#include "core/serving/servingrungs.h"

#include "core/serving/servingfixes.h"
#include "core/serving/servingknobs.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace oomlens::servingrungs {

namespace {

std::optional<double> figureBytes(const ServingView& view, std::string_view key)
{
    const ServingBudgetRow* row = view.row(key);
    return row ? std::optional<double>(static_cast<double>(row->bytes)) : std::nullopt;
}

std::optional<double> firstSetting(const ServingRun& run, std::initializer_list<std::string_view> keys)
{
    for (std::string_view key : keys) {
        if (const auto value = run.settingValue(key))
            return value;
    }
    return std::nullopt;
}

std::string integer(double value)
{
    return std::to_string(static_cast<long long>(std::llround(value)));
}

std::optional<Fix> knobRung(const Figures& f, FixKind kind, ServingKnob knob, const std::string& value,
    std::string title, std::string detail, bool changesExperiment = false)
{
    const auto snippet = knobSnippet(f.engine, knob, value);
    if (!snippet)
        return std::nullopt;
    return makeRung(kind, std::move(title), std::move(detail), *snippet, changesExperiment);
}

// A round context below what the cache holds: 16,816 tokens serve max_model_len 16,384.
double contextThatFits(double tokens)
{
    return tokens >= 2048 ? std::floor(tokens / 1024) * 1024 : std::floor(tokens);
}

// The cache one more request of full length needs, or what a context beyond the cache lacks.
std::optional<double> cacheShortfall(const Figures& f)
{
    if (f.kvCache && *f.kvCache < 0)
        return -*f.kvCache + (f.contextLength && f.bytesPerToken ? *f.contextLength * *f.bytesPerToken : 0.0);
    if (f.contextLength && f.cacheTokens && *f.contextLength > *f.cacheTokens && f.bytesPerToken)
        return (*f.contextLength - std::max(0.0, *f.cacheTokens)) * *f.bytesPerToken;
    return std::nullopt;
}

// The share an engine takes when not told: vLLM's gpu_memory_utilization and TensorRT-LLM's
// free_gpu_memory_fraction 0.9, TGI's cuda_memory_fraction 1.0; SGLang derives its own per card.
std::optional<double> defaultShare(ServingEngine engine)
{
    switch (engine) {
    case ServingEngine::Vllm:
    case ServingEngine::TensorRtLlm:
        return 0.9;
    case ServingEngine::Tgi:
        return 1.0;
    default:
        return std::nullopt;
    }
}

std::string shareName(const Figures& f)
{
    return knobName(f.engine, ServingKnob::MemoryShare);
}

} // namespace

Figures readFigures(const ServingView& view, std::optional<uint64_t> request)
{
    const ServingRun& run = view.run;
    Figures f;
    f.engine = run.engine;
    f.failure = run.failure;
    if (view.cardTotalBytes)
        f.card = static_cast<double>(*view.cardTotalBytes);
    f.utilization = firstSetting(run, { "gpu_memory_utilization", "mem_fraction_static", "cuda_memory_fraction" });
    f.contextLength = firstSetting(run, { "max_model_len", "context_length", "max_total_tokens" });
    // vLLM V1 refuses before it prints the cache's tokens, and estimates the longest context the
    // cache holds instead: for one request, the tokens it holds.
    f.cacheTokens = firstSetting(run, { "kv_cache_tokens", "max_batch_total_tokens", "estimated_max_model_len" });
    f.bytesPerToken = view.kvBytesPerToken;
    f.sequences = firstSetting(run, { "max_num_seqs", "max_running_requests", "max_batch_size" });
    f.batchedTokens = firstSetting(
        run, { "max_batch_prefill_tokens", "max_num_batched_tokens", "chunked_prefill_size", "max_num_tokens" });
    f.weights = figureBytes(view, "weights");
    f.activation = figureBytes(view, "activation_peak");
    f.kvCache = figureBytes(view, "kv_cache");
    f.graphs = figureBytes(view, "graphs");
    if (const ServingFigure* free = run.figure("card_free"))
        f.free = static_cast<double>(free->bytes);
    if (request)
        f.request = static_cast<double>(*request);
    f.multimodalProfile = run.failure == ServingFailure::ProfileRun && run.failureLine
        && contains(run.failureLine->text, "multi-modal");
    f.tensorParallel = std::max(1.0, run.settingValue("tensor_parallel_size").value_or(1));
    return f;
}

std::string fraction(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", value);
    return buffer;
}

std::string oneDecimal(double value)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
    return buffer;
}

std::string bytesText(double bytes)
{
    return formatBytes(static_cast<uint64_t>(std::max(0.0, bytes)));
}

Fix makeRung(FixKind kind, std::string title, std::string detail, std::string snippet, bool changesExperiment)
{
    Fix fix;
    fix.kind = kind;
    fix.title = std::move(title);
    fix.detail = std::move(detail);
    fix.snippet = std::move(snippet);
    fix.changesExperiment = changesExperiment;
    return fix;
}

std::optional<Fix> fewerSequences(const Figures& f)
{
    const std::string name = knobName(f.engine, ServingKnob::MaxSequences);
    if (f.sequences && *f.sequences >= 2) {
        const double half = std::floor(*f.sequences / 2);
        std::string detail = f.multimodalProfile
            ? "The profile run of a multimodal model builds " + integer(*f.sequences) + " dummy requests (" + name
                + "), each with the most images a prompt may carry, and pushes them all through the vision encoder; "
                + integer(half) + " halves that batch (limit_mm_per_prompt caps the images per request)."
            : f.failure == ServingFailure::SamplerWarmup
            ? "The sampler's warm-up runs " + integer(*f.sequences) + " dummy requests at once (" + name
                + "): their logits and sampling buffers scale with that count; " + integer(half) + " halves them."
            : "At most " + integer(*f.sequences) + " sequences run in one step; " + integer(half)
                + " halves what one step's forward and sampler hold.";
        return knobRung(f, FixKind::EngineMaxNumSeqs, ServingKnob::MaxSequences, integer(half),
            "Fewer sequences at once: " + name + " " + integer(half), std::move(detail));
    }
    return knobRung(f, FixKind::EngineMaxNumSeqs, ServingKnob::MaxSequences, "64",
        "Fewer sequences at once (" + name + ")",
        "The log does not print the engine's sequence limit; each halving halves what one step's forward and "
        "sampler hold.");
}

std::optional<Fix> fewerBatchedTokens(const Figures& f)
{
    const std::string name = knobName(f.engine, ServingKnob::BatchedTokens);
    if (f.batchedTokens && *f.batchedTokens >= 2) {
        const double half = std::floor(*f.batchedTokens / 2);
        std::string detail = "One forward runs up to " + tokensText(*f.batchedTokens) + " tokens (" + name
            + "); its activations scale with them, so " + tokensText(half) + " halves that peak";
        if (f.activation && *f.activation > 0)
            detail += ": about " + bytesText(*f.activation / 2) + " of the profile's " + bytesText(*f.activation)
                + " goes back to the KV cache";
        detail += ". Longer prompts are then prefilled in chunks.";
        auto fix = knobRung(f, FixKind::EngineBatchedTokens, ServingKnob::BatchedTokens, integer(half),
            "Fewer tokens per forward: " + name + " " + integer(half), std::move(detail));
        if (fix && f.activation && *f.activation > 0)
            fix->projectedSavingBytes = static_cast<int64_t>(*f.activation / 2);
        return fix;
    }
    std::string detail = "The prefill (and vLLM's profile run) pushes this many tokens through the model at once; its "
                         "activation peak scales with them";
    if (f.activation && *f.activation > 0)
        detail += " (" + bytesText(*f.activation) + " in the profile run)";
    return knobRung(f, FixKind::EngineBatchedTokens, ServingKnob::BatchedTokens, "2048",
        "Fewer tokens per forward, with chunked prefill (" + name + ")", detail + ".");
}

// max_model_len against what the cache holds, in requests of full length.
std::optional<Fix> shorterContext(const Figures& f)
{
    const std::string name = knobName(f.engine, ServingKnob::ContextLength);
    const double L = f.contextLength.value_or(0); // 0: not printed
    const double T = std::max(0.0, f.cacheTokens.value_or(0));
    if (L > 0 && T > 0 && L > T) {
        const double fits = contextThatFits(T);
        std::string detail = "The KV cache holds " + tokensText(T) + " tokens; one request of " + tokensText(L)
            + " does not fit. " + name + " " + tokensText(fits) + " fits " + oneDecimal(T / fits)
            + " concurrent requests of full length";
        if (f.bytesPerToken)
            detail += "; " + tokensText(L) + " needs " + bytesText((L - T) * *f.bytesPerToken) + " more cache";
        return knobRung(f, FixKind::EngineContextLength, ServingKnob::ContextLength, integer(fits),
            "Serve a shorter context: " + name + " " + integer(fits), detail + ".", true);
    }
    if (L >= 2) {
        const double half = std::floor(L / 2);
        std::string detail = "Each request may grow to " + tokensText(L) + " tokens of cache";
        if (T > 0)
            detail += "; the cache holds " + tokensText(T) + " tokens: " + oneDecimal(T / L) + " requests of "
                + tokensText(L) + ", " + oneDecimal(T / half) + " of " + tokensText(half);
        if (f.bytesPerToken)
            detail += "; one request of " + tokensText(half) + " needs " + bytesText(half * *f.bytesPerToken);
        return knobRung(f, FixKind::EngineContextLength, ServingKnob::ContextLength, integer(half),
            "Serve a shorter context: " + name + " " + integer(half), detail + ".", true);
    }
    return knobRung(f, FixKind::EngineContextLength, ServingKnob::ContextLength, "8192",
        "Serve a shorter context (" + name + ")",
        "Unless told less, the engine sizes its cache check and its longest prefill for the model's full context.",
        true);
}

std::optional<Fix> largerShare(const Figures& f)
{
    const std::string name = shareName(f);
    const std::optional<double> shortfall = cacheShortfall(f);
    if (f.utilization && f.card && *f.card > 0 && shortfall) {
        const double wanted = std::ceil((*f.utilization + *shortfall / *f.card) * 100) / 100;
        std::string detail = name + " " + fraction(*f.utilization) + " gives the engine "
            + bytesText(*f.utilization * *f.card) + " of the " + bytesText(*f.card) + " card; the cache lacks "
            + bytesText(*shortfall) + " (one request of full length included where the log gives its size), so "
            + fraction(wanted) + " would hold it";
        if (f.free && wanted * *f.card > *f.free)
            detail
                += ", but only " + bytesText(*f.free) + " is free on the card: free it first, or take the rungs below";
        else if (wanted > 0.98)
            detail += ", which leaves too little for the CUDA context, the sampler and graphs: take the rungs below";
        else
            detail += ", as long as nothing else uses the card";
        auto fix
            = knobRung(f, FixKind::EngineMemoryFraction, ServingKnob::MemoryShare, fraction(std::min(wanted, 0.98)),
                "Give the engine more of the card: " + name + " " + fraction(std::min(wanted, 0.98)), detail + ".");
        if (fix)
            fix->projectedSavingBytes = static_cast<int64_t>(*shortfall);
        return fix;
    }
    std::string detail = "The KV cache gets what the share leaves after the weights and the profile's peak";
    if (f.card)
        detail += "; each 0.01 is " + bytesText(*f.card / 100) + " more cache on this card";
    if (f.utilization) {
        const double to = std::min(0.95, *f.utilization + 0.05);
        return knobRung(f, FixKind::EngineMemoryFraction, ServingKnob::MemoryShare, fraction(to),
            "Give the engine more of the card: " + name + " " + fraction(to),
            detail + ", as far as the card's free memory allows.");
    }
    // The log does not print the share: the engine's default, where it has one, is the next step up
    // from a share set lower; SGLang computes its default from the card.
    const std::optional<double> fallback = defaultShare(f.engine);
    detail += ". The log does not print the share";
    detail += fallback ? "; the default is " + fraction(*fallback) + ": a share set lower leaves the cache less"
                       : std::string("; raise it step by step");
    return knobRung(f, FixKind::EngineMemoryFraction, ServingKnob::MemoryShare, fallback ? fraction(*fallback) : "0.9",
        "Give the engine more of the card (" + name + ")", detail + ", as far as the card's free memory allows.");
}

std::optional<Fix> smallerShare(const Figures& f)
{
    const std::string name = shareName(f);
    if (f.failure == ServingFailure::StartupFreeMemory && f.free && f.card && *f.card > 0) {
        const double fits = std::floor(*f.free / *f.card * 100) / 100;
        return knobRung(f, FixKind::EngineMemoryFraction, ServingKnob::MemoryShare, fraction(fits),
            "Ask only for what is free: " + name + " " + fraction(fits),
            name + " " + fraction(fits) + " asks " + bytesText(fits * *f.card) + ", within the " + bytesText(*f.free)
                + " free at start-up; the KV cache shrinks by what the others hold.");
    }
    const double from = f.utilization.value_or(defaultShare(f.engine).value_or(0.9));
    double step = 0.05;
    std::string why = "What failed lies outside the engine's share (";
    if (f.failure == ServingFailure::GraphCapture && f.card && *f.card > 0) {
        const double need = f.graphs ? *f.graphs : (f.request ? *f.request : 0.0);
        step = std::max(0.01, std::ceil(need / *f.card * 100) / 100);
        why += "CUDA graphs are captured after the cache took its share";
        if (need > 0)
            why += "; they need about " + bytesText(need);
    } else {
        why += f.failure == ServingFailure::SamplerWarmup ? "the sampler's warm-up" : "a step's activations and logits";
        why += " beyond what the profile run measured";
    }
    const double to = std::max(0.05, from - step);
    why += "): " + fraction(to) + " leaves ";
    why += f.card ? bytesText((from - to) * *f.card) + " more of the card outside the cache."
                  : "more of the card outside the cache.";
    auto fix = knobRung(f, FixKind::EngineMemoryFraction, ServingKnob::MemoryShare, fraction(to),
        "Leave more of the card outside the cache: " + name + " " + fraction(to), why);
    if (fix && f.card)
        fix->projectedSavingBytes = static_cast<int64_t>((from - to) * *f.card);
    return fix;
}

std::optional<Fix> eagerMode(const Figures& f)
{
    std::string detail = "No CUDA graphs: their private pools";
    detail += f.graphs ? " (" + bytesText(*f.graphs) + " in this log)" : std::string();
    detail += " are not allocated, at some decode speed.";
    auto fix = knobRung(f, FixKind::EagerFallback, ServingKnob::Eager, f.engine == ServingEngine::Tgi ? "0" : "",
        "Run without CUDA graphs (eager mode)", detail);
    if (fix && f.graphs && *f.graphs > 0)
        fix->projectedSavingBytes = static_cast<int64_t>(*f.graphs);
    return fix;
}

std::optional<Fix> fewerGraphSizes(const Figures& f)
{
    const std::string value = f.engine == ServingEngine::Sglang ? "32"
        : f.engine == ServingEngine::Tgi                        ? "1,2,4,8,16,32"
                                                                : "1 2 4 8 16 32";
    return knobRung(f, FixKind::FewerGraphShapes, ServingKnob::CaptureSizes, value,
        "Capture graphs for fewer batch sizes (" + knobName(f.engine, ServingKnob::CaptureSizes) + ")",
        "Every captured batch size keeps its own graph; the largest sizes hold the most. Batches above the largest "
        "run eagerly.");
}

std::optional<Fix> fp8Cache(const Figures& f)
{
    std::string detail = "An 8-bit cache holds twice the tokens of a 16-bit one in the same memory";
    if (f.cacheTokens && *f.cacheTokens > 0)
        detail += ": " + tokensText(*f.cacheTokens) + " tokens become about " + tokensText(2 * *f.cacheTokens);
    detail += ". It changes the attention's numerics slightly.";
    const std::string value
        = f.engine == ServingEngine::Vllm || f.engine == ServingEngine::TensorRtLlm ? "fp8" : "fp8_e5m2";
    return knobRung(
        f, FixKind::EngineKvCacheDtype, ServingKnob::KvCacheFp8, value, "Store the KV cache in fp8", detail, true);
}

std::optional<Fix> quantizedWeights(const Figures& f)
{
    std::string detail = "8-bit weights take half of 16-bit ones";
    if (f.weights && *f.weights > 0)
        detail += ": about " + bytesText(*f.weights / 2) + " of the " + bytesText(*f.weights) + " the weights take";
    detail += ". It changes the model's outputs; a pre-quantised checkpoint (AWQ, GPTQ, FP8) does the same.";
    auto fix = knobRung(f, FixKind::EngineQuantizedWeights, ServingKnob::QuantizedWeights, "fp8",
        "Serve quantised weights", detail, true);
    if (fix && f.weights && *f.weights > 0)
        fix->projectedSavingBytes = static_cast<int64_t>(*f.weights / 2);
    return fix;
}

std::optional<Fix> moreGpus(const Figures& f)
{
    const double to = f.tensorParallel * 2;
    std::string detail = "Tensor parallelism over " + integer(to) + " GPUs splits the weights and the KV heads";
    if (f.weights && *f.weights > 0)
        detail += ": each GPU holds about " + bytesText(*f.weights / 2) + " of weights instead of "
            + bytesText(*f.weights);
    auto fix = knobRung(f, FixKind::EngineTensorParallel, ServingKnob::TensorParallel, integer(to),
        "Split the model over more GPUs: tensor parallel " + integer(to), detail + ".");
    if (fix && f.weights && *f.weights > 0)
        fix->projectedSavingBytes = static_cast<int64_t>(*f.weights / 2);
    return fix;
}

std::optional<Fix> cpuOffload(const Figures& f)
{
    const double gib = f.weights && *f.weights > 0 ? std::ceil(*f.weights / 4 / static_cast<double>(GiB)) : 4;
    return knobRung(f, FixKind::EngineCpuOffload, ServingKnob::CpuOffload, integer(gib),
        "Keep part of the weights in host memory (" + knobName(f.engine, ServingKnob::CpuOffload) + ")",
        "Each forward streams them over PCIe: slow, a last resort when the model must fit as it is.");
}

std::optional<Fix> stopOtherProcess(const Figures& f)
{
    std::string detail = "The card had less free than the engine asked for when it started";
    if (f.free && f.card)
        detail += ": " + bytesText(*f.card - *f.free) + " of " + bytesText(*f.card)
            + " was already in use (another process, or a previous engine still alive)";
    detail += ". nvidia-smi lists who holds it; a finished engine frees its memory only when its process exits.";
    return makeRung(FixKind::StopOtherProcess, "Free the card before the engine starts", detail,
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv");
}

} // namespace oomlens::servingrungs
