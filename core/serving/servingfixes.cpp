#include "core/serving/servingfixes.h"

#include "core/serving/servingrungs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace oomlens {

namespace {

using namespace servingrungs;
using Rung = std::optional<Fix> (*)(const Figures&);

std::vector<Fix> engineRungs(const Figures& f, std::initializer_list<Rung> rungs)
{
    std::vector<Fix> fixes;
    for (const Rung rung : rungs) {
        std::optional<Fix> fix = rung(f);
        const bool present
            = fix && std::any_of(fixes.begin(), fixes.end(), [&](const Fix& g) { return g.kind == fix->kind; });
        if (fix && !present)
            fixes.push_back(std::move(*fix));
    }
    return fixes;
}

// The engines' ladder, the cause's own rung first.
std::vector<Fix> engineLadder(DiagnosisId cause, const Figures& f)
{
    switch (cause) {
    case DiagnosisId::KvCacheBudget:
        if (f.failure == ServingFailure::ContextExceedsCache)
            return engineRungs(f, { shorterContext, largerShare, fp8Cache, quantizedWeights, moreGpus, cpuOffload });
        return engineRungs(f,
            { largerShare, fewerBatchedTokens, shorterContext, eagerMode, fp8Cache, quantizedWeights, moreGpus,
                cpuOffload });
    case DiagnosisId::EngineBatch:
        if (f.failure == ServingFailure::SamplerWarmup)
            return engineRungs(f, { fewerSequences, smallerShare, fewerBatchedTokens, quantizedWeights, moreGpus });
        if (f.multimodalProfile)
            return engineRungs(f, { fewerSequences, fewerBatchedTokens, shorterContext, quantizedWeights, moreGpus });
        return engineRungs(
            f, { fewerBatchedTokens, fewerSequences, shorterContext, quantizedWeights, moreGpus, cpuOffload });
    case DiagnosisId::GraphCapture:
        return engineRungs(f, { smallerShare, eagerMode, fewerGraphSizes, fewerSequences });
    case DiagnosisId::OtherProcess:
        return engineRungs(f, { stopOtherProcess, smallerShare });
    case DiagnosisId::Capacity:
        return engineRungs(f, { quantizedWeights, moreGpus, cpuOffload, fp8Cache });
    case DiagnosisId::LargeAllocation:
        return engineRungs(f, { smallerShare, fewerBatchedTokens, shorterContext, fewerSequences });
    default:
        return engineRungs(f,
            { fewerSequences, fewerBatchedTokens, shorterContext, smallerShare, eagerMode, fp8Cache, quantizedWeights,
                moreGpus, cpuOffload });
    }
}

std::vector<Fix> generateLadder(DiagnosisId cause, const ServingView& view)
{
    if (cause == DiagnosisId::Capacity)
        return { generateQuantizedWeights(), generateFewerTokens(view), generateCache() };
    return { generateFewerTokens(view), generateCache(), generateSdpa(), generateQuantizedWeights() };
}

std::vector<Fix> diffusersLadder(DiagnosisId cause)
{
    if (cause == DiagnosisId::Capacity)
        return { diffusersOffload(), diffusersVaeTiling(), diffusersAttentionSlicing(), diffusersResolution() };
    return { diffusersVaeTiling(), diffusersAttentionSlicing(), diffusersOffload(), diffusersResolution() };
}

} // namespace

std::vector<Fix> servingLadder(DiagnosisId cause, const ServingView& view, std::optional<uint64_t> request)
{
    switch (view.run.engine) {
    case ServingEngine::HfGenerate:
        return generateLadder(cause, view);
    case ServingEngine::Diffusers:
        return diffusersLadder(cause);
    default:
        return engineLadder(cause, readFigures(view, request));
    }
}

Fix smallerBatchRung()
{
    return makeRung(FixKind::SmallerBatch, "Pass fewer samples through the model at once",
        "Activations, and a generation's cache, grow with the batch: half the batch holds half of them. A training "
        "run keeps its effective batch with gradient accumulation; an inference run sends fewer prompts per call.",
        "loader = DataLoader(dataset, batch_size=batch_size // 2)\n"
        "# or, generating: model.generate(**tokenizer(prompts[:len(prompts) // 2], return_tensors=\"pt\", "
        "padding=True).to(\"cuda\"))");
}

std::string tokensText(double tokens)
{
    const std::string digits = std::to_string(static_cast<long long>(std::llround(std::fabs(tokens))));
    std::string text = tokens < 0 ? "-" : "";
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            text.push_back(',');
        text.push_back(digits[i]);
    }
    return text;
}

std::string settingText(double value)
{
    if (value == std::floor(value) && std::fabs(value) < 1e15)
        return tokensText(value);
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", value);
    return buffer;
}

bool isTrainingFix(FixKind kind)
{
    switch (kind) {
    case FixKind::MicroBatch:
    case FixKind::Bf16:
    case FixKind::Checkpointing:
    case FixKind::ShorterSequences:
    case FixKind::Optimizer8bit:
    case FixKind::Zero:
    case FixKind::Offload:
    case FixKind::Lora:
    case FixKind::EvalAccumulation:
    case FixKind::EvalBatchSize:
    case FixKind::OptimizerForeach:
    case FixKind::LengthBucketing:
    case FixKind::Fsdp2:
    case FixKind::ReshardAfterForward:
    case FixKind::FewerAllGathersInFlight:
    case FixKind::BucketSizes:
    case FixKind::GradientAsBucketView:
    case FixKind::SyncGradientsEachMicroBatch:
    case FixKind::OffloadCheckpointedInputs:
    case FixKind::OffloadTrainerDuringRollout:
    case FixKind::FreeEngineCacheBeforeUpdate:
    case FixKind::BucketedWeightSync:
    case FixKind::MoreRolloutGpus:
        return true;
    default:
        return false;
    }
}

} // namespace oomlens
