#include "parsers/text/servingfigures.h"

#include "core/strings.h"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace oomlens::text {

namespace {

// The engines' own failure messages, as their source raises them.
struct FailureText
{
    std::string_view needle;
    ServingFailure failure;
};

constexpr std::array<FailureText, 11> failureTexts { {
    // vLLM: the check of max_model_len against the cache. V0's worker.py raise_if_cache_size_invalid
    // counts tokens; V1's kv_cache_utils.py check_enough_kv_cache_memory counts bytes.
    { "is larger than the maximum number of tokens that can be stored in KV cache",
        ServingFailure::ContextExceedsCache },
    { "KV cache is needed, which is larger than the available KV cache memory", ServingFailure::ContextExceedsCache },
    { "No available memory for the cache blocks", ServingFailure::NoCacheBlocks },
    // SGLang's model runner: the pool's profiled token count is zero or less.
    { "Not enough memory. Please try to increase --mem-fraction-static", ServingFailure::NoCacheBlocks },
    { "on startup is less than desired GPU memory utilization", ServingFailure::StartupFreeMemory },
    { "when warming up sampler with", ServingFailure::SamplerWarmup },
    // TGI's flash_causal_lm.warmup.
    { "You need to decrease `--max-batch-prefill-tokens`", ServingFailure::PrefillTokens },
    { "Not enough memory to handle", ServingFailure::PrefillTokens },
    { "Unable to warmup model", ServingFailure::Warmup },
    { "Method Warmup encountered an error", ServingFailure::Warmup },
    { "Capture cuda graph failed", ServingFailure::GraphCapture },
} };

// Functions whose frame places a failure in a stage of the engine's start or of its serving loop.
// The first matching row decides: warm-up and capture are inside the profile's callers, the
// profile inside the engine's construction.
struct FrameStage
{
    std::string_view function;
    ServingFailure failure;
};

constexpr std::array<FrameStage, 26> frameStages { {
    { "_dummy_sampler_run", ServingFailure::SamplerWarmup },
    { "capture_model", ServingFailure::GraphCapture },
    { "_capture_cudagraphs", ServingFailure::GraphCapture },
    { "capture_one_batch_size", ServingFailure::GraphCapture },
    { "init_cuda_graphs", ServingFailure::GraphCapture },
    { "_allocate_kv_cache", ServingFailure::KvCacheAllocation },
    { "_allocate_kv_cache_tensors", ServingFailure::KvCacheAllocation },
    { "initialize_kv_cache_tensors", ServingFailure::KvCacheAllocation },
    { "init_memory_pool", ServingFailure::KvCacheAllocation },
    { "profile_run", ServingFailure::ProfileRun },
    { "determine_num_available_blocks", ServingFailure::ProfileRun },
    { "determine_available_memory", ServingFailure::ProfileRun },
    { "load_model", ServingFailure::WeightLoad },
    { "load_weights", ServingFailure::WeightLoad },
    { "_initialize_model", ServingFailure::WeightLoad },
    { "execute_model", ServingFailure::ServingStep },
    { "engine_step", ServingFailure::ServingStep },
    { "run_engine_loop", ServingFailure::ServingStep },
    { "start_worker_execution_loop", ServingFailure::ServingStep },
    { "execute_model_spmd", ServingFailure::ServingStep },
    { "forward_batch_generation", ServingFailure::ServingStep },
    { "run_batch", ServingFailure::ServingStep },
    { "event_loop_normal", ServingFailure::ServingStep },
    { "event_loop_overlap", ServingFailure::ServingStep },
    { "generate", ServingFailure::Generate },
    { "__call__", ServingFailure::Pipeline },
} };

// The function a traceback line names: `File "…", line 12, in determine_num_available_blocks`, or
// the name in a line the engine printed about the method that failed ("while processing method
// start_worker_execution_loop").
std::string_view frameFunction(std::string_view content)
{
    if (content.starts_with("File ") || content.starts_with("File\"")) {
        const size_t in = content.rfind(", in ");
        if (in != std::string_view::npos)
            return trimmed(content.substr(in + 5));
    }
    const size_t method = content.find("while processing method ");
    if (method != std::string_view::npos) {
        std::string_view name = content.substr(method + 24);
        const size_t end = name.find_first_of(" .");
        return name.substr(0, end);
    }
    return {};
}

// A stage the engine announces when it starts it and again when it ends it: an error after the
// start and before the end happened inside it (a capture whose OOM line the paste cut off). Either
// end closes the stage: one start line serves engine generations that word the end differently.
struct ProgressStage
{
    std::string_view start;
    std::array<std::string_view, 2> ends;
    ServingFailure failure;
};

constexpr std::array<ProgressStage, 5> progressStages { {
    { "Capturing cudagraphs", { "Graph capturing finished", {} }, ServingFailure::GraphCapture },
    { "Capturing CUDA graph", { "Graph capturing finished", {} }, ServingFailure::GraphCapture },
    { "Capture cuda graph begin", { "Capture cuda graph end", {} }, ServingFailure::GraphCapture },
    { "Starting profile run", { "Memory profiling takes", {} }, ServingFailure::ProfileRun },
    // vLLM's model runner opens the load with "Starting to load model"; V0 (worker/model_runner.py)
    // closes it with "Loading model weights took", V1 (v1/worker/gpu_model_runner.py) with "Model
    // loading took".
    { "Starting to load model", { "Model loading took", "Loading model weights took" }, ServingFailure::WeightLoad },
} };

bool endsStage(const ProgressStage& stage, std::string_view content)
{
    return std::any_of(stage.ends.begin(), stage.ends.end(),
        [&](std::string_view end) { return !end.empty() && contains(content, end); });
}

bool looksLikeError(std::string_view raw)
{
    return contains(raw, "ERROR") || contains(raw, "Error") || contains(raw, "Traceback")
        || contains(raw, "out of memory");
}

bool openStageFailure(const std::vector<RawLine>& lines, ServingRun& run)
{
    constexpr size_t none = static_cast<size_t>(-1);
    for (const ProgressStage& stage : progressStages) {
        size_t started = none;
        for (size_t i = 0; i < lines.size(); ++i) {
            if (contains(lines[i].content, stage.start)) {
                started = i;
            } else if (started != none && endsStage(stage, lines[i].content)) {
                started = none;
            } else if (started != none && looksLikeError(lines[i].raw)) {
                run.failure = stage.failure;
                run.failureLine = lines[started].cite();
                return true;
            }
        }
    }
    return false;
}

bool readMessageFailure(const std::vector<RawLine>& lines, ServingRun& run)
{
    for (const FailureText& text : failureTexts) {
        for (const RawLine& line : lines) {
            if (contains(line.content, text.needle)) {
                run.failure = text.failure;
                run.failureLine = line.cite();
                return true;
            }
        }
    }
    // The engine's own accounting left the cache nothing, whether or not the raise that follows was
    // pasted: SGLang's profiled pool of zero tokens or less, vLLM's negative rest or zero blocks.
    const ServingSetting* tokens = run.setting("kv_cache_tokens");
    const ServingSetting* blocks = run.setting("gpu_blocks");
    const ServingFigure* cache = run.figure("kv_cache");
    const std::optional<ServingLine> empty = tokens && tokens->value <= 0 ? std::optional(tokens->source)
        : cache && cache->bytes <= 0                                      ? std::optional(cache->source)
        : blocks && blocks->value <= 0                                    ? std::optional(blocks->source)
                                                                          : std::nullopt;
    if (empty) {
        run.failure = ServingFailure::NoCacheBlocks;
        run.failureLine = empty;
        return true;
    }
    return false;
}

// TensorRT-LLM's C++ runtime reports a CUDA allocation failure as an [ERROR] line; what it was
// allocating decides the stage. TllmRuntime's constructor (runtime/tllmRuntime.cpp) first
// deserializes the engine, which puts the engine's weights on the card (TensorRT's loadPlan; on
// failure "Failed to deserialize cuda engine."), then allocates the execution context (the
// activations the engine was built for: max batch size, max tokens); the KV cache manager comes
// after both.
bool readTensorRtFailure(const std::vector<RawLine>& lines, ServingRun& run)
{
    const auto error = std::find_if(lines.begin(), lines.end(), [](const RawLine& line) {
        return contains(line.raw, "[TensorRT-LLM][ERROR]") && contains(line.raw, "out of memory");
    });
    if (error == lines.end())
        return false;
    const auto anyLine = [&](std::initializer_list<std::string_view> needles) {
        return std::find_if(lines.begin(), lines.end(), [&](const RawLine& line) {
            return std::any_of(
                needles.begin(), needles.end(), [&](std::string_view n) { return contains(line.raw, n); });
        });
    };
    if (const auto load = anyLine({ "Failed to deserialize cuda engine", "::loadPlan::" }); load != lines.end()) {
        run.failure = ServingFailure::WeightLoad;
        run.failureLine = load->cite();
        return true;
    }
    const bool kvCache = anyLine({ "KVCacheManager", "kv_cache_manager" }) != lines.end();
    run.failure = kvCache ? ServingFailure::KvCacheAllocation : ServingFailure::RuntimeBuffers;
    run.failureLine = error->cite();
    return true;
}

bool readFrameFailure(const std::vector<RawLine>& lines, ServingRun& run)
{
    std::optional<size_t> best;
    const RawLine* bestLine = nullptr;
    for (const RawLine& line : lines) {
        const std::string_view function = frameFunction(line.content);
        if (function.empty())
            continue;
        for (size_t row = 0; row < frameStages.size(); ++row) {
            const bool generic = frameStages[row].failure == ServingFailure::Generate
                || frameStages[row].failure == ServingFailure::Pipeline;
            const bool engineFits = !generic
                || (frameStages[row].failure == ServingFailure::Generate && run.engine == ServingEngine::HfGenerate)
                || (frameStages[row].failure == ServingFailure::Pipeline && run.engine == ServingEngine::Diffusers);
            if (function == frameStages[row].function && engineFits && (!best || row < *best)) {
                best = row;
                bestLine = &line;
            }
        }
    }
    if (!best)
        return false;
    run.failure = frameStages[*best].failure;
    run.failureLine = bestLine->cite();
    return true;
}

} // namespace

void readFailure(const std::vector<RawLine>& lines, bool oomInText, ServingRun& run)
{
    if (readMessageFailure(lines, run) || readTensorRtFailure(lines, run))
        return;
    if (run.engine != ServingEngine::Tgi && openStageFailure(lines, run))
        return;
    if (readFrameFailure(lines, run))
        return;
    // An OOM message with no frame or stage to place it: generate() and pipelines fail in their call.
    if (oomInText && run.engine == ServingEngine::HfGenerate)
        run.failure = ServingFailure::Generate;
    else if (oomInText && run.engine == ServingEngine::Diffusers)
        run.failure = ServingFailure::Pipeline;
}

} // namespace oomlens::text
