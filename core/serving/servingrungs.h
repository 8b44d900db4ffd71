#pragma once

#include "core/diagnosis.h"
#include "core/serving/servingview.h"

#include <optional>
#include <string>

// The rungs of the inference ladder, one function each (servingrungs.cpp for the engines' knobs,
// servinggeneraterungs.cpp for generate() and diffusers); servingfixes.cpp orders them per cause.
namespace oomlens::servingrungs {

// The figures a rung projects with, read once from the view: nullopt where the log is silent.
struct Figures
{
    ServingEngine engine = ServingEngine::Vllm;
    ServingFailure failure = ServingFailure::None;
    std::optional<double> card; // bytes
    std::optional<double> utilization; // gpu_memory_utilization / mem_fraction_static / cuda_memory_fraction
    std::optional<double> contextLength; // max_model_len as the engine reported it
    std::optional<double> cacheTokens; // tokens the KV cache holds (negative: the profile left none)
    std::optional<double> bytesPerToken;
    std::optional<double> sequences; // max_num_seqs, or the dummy requests of the sampler's warm-up
    std::optional<double> batchedTokens; // tokens of one forward: prefill or profile
    std::optional<double> weights;
    std::optional<double> activation;
    std::optional<double> kvCache; // bytes (negative: the rest the profile left)
    std::optional<double> graphs;
    std::optional<double> free; // free on the card at start-up
    std::optional<double> request; // the failing request of the OOM message
    double tensorParallel = 1;
    bool multimodalProfile = false; // vLLM's profile run of a multimodal model (dummy images per sequence)
};
Figures readFigures(const ServingView& view, std::optional<uint64_t> request);

std::optional<Fix> fewerSequences(const Figures& f);
std::optional<Fix> fewerBatchedTokens(const Figures& f);
std::optional<Fix> shorterContext(const Figures& f);
// Raise the share for a cache too small; lower it when what failed lies outside the share
// (graph capture, the sampler's warm-up, a step's peak, another process's memory).
std::optional<Fix> largerShare(const Figures& f);
std::optional<Fix> smallerShare(const Figures& f);
std::optional<Fix> eagerMode(const Figures& f);
std::optional<Fix> fewerGraphSizes(const Figures& f);
std::optional<Fix> fp8Cache(const Figures& f);
std::optional<Fix> quantizedWeights(const Figures& f);
std::optional<Fix> moreGpus(const Figures& f);
std::optional<Fix> cpuOffload(const Figures& f);
std::optional<Fix> stopOtherProcess(const Figures& f);

// servinggeneraterungs.cpp
Fix generateFewerTokens(const ServingView& view);
Fix generateCache();
Fix generateSdpa();
Fix generateQuantizedWeights();
Fix diffusersOffload();
Fix diffusersVaeTiling();
Fix diffusersAttentionSlicing();
Fix diffusersResolution();

// Shared spelling of numbers in rungs.
std::string fraction(double value); // "0.89"
std::string oneDecimal(double value); // "2.3"
std::string bytesText(double bytes); // formatBytes, 0 below zero
Fix makeRung(FixKind kind, std::string title, std::string detail, std::string snippet, bool changesExperiment = false);

} // namespace oomlens::servingrungs
