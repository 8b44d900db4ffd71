#include "parsers/text/servinglog.h"

#include "core/serving/workload.h"
#include "parsers/text/servingfigures.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <array>

namespace oomlens::text {

namespace {

// The engines in the order a sign decides between them: an engine that imports another's code
// (SGLang and TGI load vLLM's kernels, every engine loads transformers) is named by its own
// signs first.
struct EngineSigns
{
    ServingEngine engine;
    std::array<std::string_view, 18> needles;
};

constexpr std::array<EngineSigns, 6> engineSigns { {
    { ServingEngine::TensorRtLlm,
        { "[TensorRT-LLM]", "tensorrt_llm/", "tensorrt_llm::", "trtllm-build", "trtllm-serve" } },
    { ServingEngine::Tgi,
        { "text_generation_launcher", "text_generation_router", "text_generation_server", "text-generation-launcher",
            "--max-batch-prefill-tokens" } },
    { ServingEngine::Sglang,
        { "sglang/", "sglang.launch_server", "Load weight end.", "KV Cache is allocated. #tokens",
            "max_total_num_tokens=", "--mem-fraction-static", "than the profiled value" } },
    { ServingEngine::Vllm,
        { "/vllm/", "vllm/", "(VllmWorker", "(EngineCore", "vllm serve", "from vllm", "vllm==",
            "the current vLLM instance", "that can be stored in KV cache", "No available memory for the cache blocks",
            "than desired GPU memory utilization", "warming up sampler with",
            "Available KV cache memory:", "GPU KV cache size:", "tokens per request:", "Graph capturing finished",
            "Memory profiling takes", "Loading model weights took" } },
    { ServingEngine::Diffusers,
        { "diffusers/", "DiffusionPipeline", "StableDiffusionPipeline", "FluxPipeline",
            "diffusers==", "enable_model_cpu_offload", "UNet2DConditionModel" } },
    { ServingEngine::HfGenerate,
        { "transformers/generation/", "generation/utils.py", "DynamicCache", "StaticCache", "GenerationConfig {",
            "text2text_generation.py", "transformers/cache_utils.py", ".generate(" } },
} };

// SGLang's logger puts "[2025-07-02 07:41:58 DP0 TP0]" in front of every line of its workers.
bool sglangPrefix(std::string_view raw)
{
    const std::string_view rest = trimmedLeft(raw);
    if (!rest.starts_with("["))
        return false;
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close > 64)
        return false;
    const std::string_view inside = rest.substr(0, close);
    const size_t tp = inside.rfind(" TP");
    return tp != std::string_view::npos && tp + 3 < inside.size() && isDigit(inside[tp + 3]) && contains(inside, ":");
}

struct EngineFound
{
    ServingEngine engine;
    size_t lineIndex;
};

std::optional<EngineFound> detectEngine(const std::vector<RawLine>& lines)
{
    std::array<std::optional<size_t>, engineSigns.size()> first {};
    for (size_t i = 0; i < lines.size(); ++i) {
        // nvidia-smi's process table names what else runs on the card, not what failed.
        if (trimmedLeft(lines[i].raw).starts_with("|"))
            continue;
        for (size_t e = 0; e < engineSigns.size(); ++e) {
            if (first[e])
                continue;
            const bool sign = std::any_of(engineSigns[e].needles.begin(), engineSigns[e].needles.end(),
                [&](std::string_view needle) { return !needle.empty() && contains(lines[i].raw, needle); });
            if (sign || (engineSigns[e].engine == ServingEngine::Sglang && sglangPrefix(lines[i].raw)))
                first[e] = i;
        }
    }
    for (size_t e = 0; e < engineSigns.size(); ++e) {
        if (first[e])
            return EngineFound { engineSigns[e].engine, *first[e] };
    }
    return std::nullopt;
}

} // namespace

std::optional<ServingRun> findServingRun(std::string_view input, const TextFindings& findings)
{
    const std::vector<RawLine> lines = rawLines(input);
    const std::optional<EngineFound> found = detectEngine(lines);
    if (!found || textTrainingEvidence(findings))
        return std::nullopt;
    ServingRun run;
    run.engine = found->engine;
    run.engineEvidence = lines[found->lineIndex].cite();
    readVersion(lines, run);
    readFigures(lines, run);
    readFailure(lines, !findings.oomMessages.empty(), run);
    return run;
}

} // namespace oomlens::text
