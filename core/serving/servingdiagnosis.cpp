#include "core/serving/servingdiagnosis.h"

#include "core/analysis/enginemarkers.h"
#include "core/analysis/stackfeatures.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/ranking.h"
#include "core/serving/servingfixes.h"
#include "core/serving/workload.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace oomlens {

namespace {

// Causes only a training step has: a backward, an optimizer's state, an evaluation loop's
// outputs, a longer batch among the training steps, a trainer beside an engine.
bool trainingOnly(DiagnosisId id)
{
    return id == DiagnosisId::FirstBackward || id == DiagnosisId::OptimizerStep2 || id == DiagnosisId::EvalAccumulation
        || id == DiagnosisId::LongestBatch || id == DiagnosisId::ColocatedEngine;
}

// A snapshot holding gradients or optimizer state at its peak is a training job's, whatever engine
// its text names.
bool snapshotsTrain(const CaseAnalysis& result)
{
    for (const SnapshotAnalysis& snapshot : result.snapshots) {
        const DeviceAnalysis* device = snapshot.primary();
        if (device
            && (device->categoriesAtPeak[static_cast<size_t>(Category::Gradients)] > 0
                || device->categoriesAtPeak[static_cast<size_t>(Category::OptimizerState)] > 0))
            return true;
    }
    return false;
}

// A snapshot's engine frames (the RL jobs' markers, core/analysis/enginemarkers.h): the engine
// whose stacks allocated the most, when the snapshot shows no training.
std::optional<ServingView> snapshotServing(const CaseAnalysis& result)
{
    for (size_t i = 0; i < result.snapshots.size(); ++i) {
        const SnapshotAnalysis& analysis = result.snapshots[i];
        const DeviceAnalysis* device = analysis.primary();
        if (!device || !analysis.snapshot || !analysis.snapshot->frames)
            continue;
        StackFeatures features(*analysis.snapshot);
        std::array<uint64_t, 5> bytes {};
        for (const Allocation& allocation : device->allocations) {
            if (allocation.stack != FrameTable::emptyStack())
                bytes[static_cast<size_t>(features.engine(allocation.stack))] += allocation.blockSize;
        }
        const auto best = std::max_element(bytes.begin() + 1, bytes.end());
        if (*best == 0)
            continue;
        const auto engine = static_cast<Engine>(best - bytes.begin());
        ServingView view;
        view.run.engine = engine == Engine::Vllm ? ServingEngine::Vllm
            : engine == Engine::Sglang           ? ServingEngine::Sglang
            : engine == Engine::TensorRtLlm      ? ServingEngine::TensorRtLlm
                                                 : ServingEngine::HfGenerate;
        view.run.engineEvidence = { 0,
            "snapshot " + std::to_string(i + 1) + ": " + formatBytes(*best) + " allocated under "
                + std::string(engineLabel(engine)) + " frames, no gradients or optimizer state" };
        return view;
    }
    return std::nullopt;
}

struct EngineCause
{
    DiagnosisId id;
    double confidence; // what the engine's own message says is worth more than a frame that places the failure
    bool named; // the engine's message names the cause
};

std::optional<EngineCause> causeOf(const ServingView& view, bool oomInText)
{
    const ServingFailure failure = view.run.failure;
    const ServingBudgetRow* weights = view.row("weights");
    const ServingBudgetRow* share = view.row("budget");
    switch (failure) {
    case ServingFailure::ContextExceedsCache:
        return EngineCause { DiagnosisId::KvCacheBudget, 0.9, true };
    case ServingFailure::NoCacheBlocks:
        // The weights alone beyond the engine's whole share: no setting of the cache makes room.
        if (weights && share && weights->bytes >= share->bytes && view.cardTotalBytes
            && weights->bytes >= static_cast<int64_t>(*view.cardTotalBytes) * 95 / 100)
            return EngineCause { DiagnosisId::Capacity, 0.85, true };
        return EngineCause { DiagnosisId::KvCacheBudget, 0.9, true };
    case ServingFailure::KvCacheAllocation:
        return EngineCause { DiagnosisId::KvCacheBudget, 0.75, false };
    case ServingFailure::StartupFreeMemory:
        return EngineCause { DiagnosisId::OtherProcess, 0.9, true };
    case ServingFailure::SamplerWarmup:
    case ServingFailure::PrefillTokens:
        return EngineCause { DiagnosisId::EngineBatch, 0.9, true };
    case ServingFailure::Warmup:
        return EngineCause { DiagnosisId::EngineBatch, oomInText ? 0.85 : 0.7, true };
    case ServingFailure::ProfileRun:
    case ServingFailure::RuntimeBuffers:
        return EngineCause { DiagnosisId::EngineBatch, 0.75, false };
    case ServingFailure::GraphCapture:
        return EngineCause { DiagnosisId::GraphCapture, 0.8, false };
    case ServingFailure::WeightLoad:
        return EngineCause { DiagnosisId::Capacity, 0.75, false };
    case ServingFailure::ServingStep:
        if (oomInText)
            return EngineCause { DiagnosisId::LargeAllocation, 0.7, false };
        return std::nullopt;
    case ServingFailure::Generate:
        // A frame of generate() placed the OOM: the forward it runs (prefill or a decoding step)
        // holds batch x beams sequences at once (transformers' generation/utils.py expands the
        // inputs by num_beams before the first forward), and their cache grows with every token.
        if (oomInText && view.run.failureLine)
            return EngineCause { DiagnosisId::EngineBatch, 0.7, false };
        return std::nullopt;
    case ServingFailure::None:
    case ServingFailure::Pipeline:
        break;
    }
    return std::nullopt;
}

std::string summaryFor(DiagnosisId id, const ServingView& view)
{
    const std::string engine = view.engineText();
    switch (id) {
    case DiagnosisId::KvCacheBudget:
        return engine
            + " cannot give its KV cache what it was asked to serve: what its memory share leaves after the "
              "weights and the profile run's peak holds fewer tokens than one request of the longest context.";
    case DiagnosisId::EngineBatch:
        if (view.run.engine == ServingEngine::HfGenerate)
            return engine
                + " ran out in the model's forward: the sequences it runs at once (batch x beams, each with "
                  "its prompt and the tokens generated so far in the cache) need more than the weights leave.";
        return engine
            + " ran out while pushing its largest batch through the model (warm-up, prefill or the profile "
              "run): too many sequences or tokens at once for what the weights and the cache leave.";
    case DiagnosisId::GraphCapture:
        return engine + " ran out while capturing CUDA graphs, after the KV cache had taken its share of the card.";
    case DiagnosisId::OtherProcess:
        return engine
            + " found less free memory at start-up than its memory share asks for: something else holds "
              "the card.";
    case DiagnosisId::Capacity:
        return engine + " cannot hold the model's weights at this precision on this many GPUs.";
    case DiagnosisId::LargeAllocation:
        return engine
            + " ran out in a step while serving: one batch's attention, activations or logits needed more "
              "than the profile run measured and the cache left.";
    default:
        return engine + " ran out of memory.";
    }
}

Diagnosis engineDiagnosis(const EngineCause& cause, const ServingView& view, bool measured)
{
    // A frame that only places the failure counts for less beside a snapshot's measured bands.
    const double confidence = measured && !cause.named ? cause.confidence * 0.6 : cause.confidence;
    Diagnosis d = makeDiagnosis(cause.id, confidence, summaryFor(cause.id, view));
    if (cause.id == DiagnosisId::Capacity)
        d.title = "The model's weights do not fit on the card";
    d.evidence.push_back({ "the engine: " + view.engineText() + " ("
            + (view.run.engineEvidence.line > 0 ? view.run.engineEvidence.cite() : view.run.engineEvidence.text) + ")",
        {} });
    if (view.run.failureLine)
        d.evidence.push_back({ "where it failed: " + view.run.failureLine->cite(), {} });
    if (!view.rows.empty()) {
        std::string split = "the engine's split of the card:";
        const char* separator = " ";
        for (const ServingBudgetRow& row : view.rows) {
            split += separator + lowercase(row.label) + " " + signedBytesText(row.bytes);
            separator = ", ";
        }
        d.evidence.push_back({ split + " (the lines are in the serving budget)", {} });
    }
    std::string seen;
    for (const ServingSetting& setting : view.run.settings) {
        if (view.run.setting(setting.key) == &setting)
            seen += (seen.empty() ? "" : ", ") + setting.key + " " + settingText(setting.value) + " (line "
                + std::to_string(setting.source.line) + ")";
    }
    if (!seen.empty())
        d.evidence.push_back({ "settings the log shows: " + seen, {} });
    if (view.kvBytesPerToken)
        d.evidence.push_back({ "the KV cache takes " + formatBytes(static_cast<uint64_t>(*view.kvBytesPerToken))
                + " per token, from " + view.kvBytesPerTokenSource,
            {} });
    return d;
}

// The training rungs out, the engine's in; the engine's cause-specific fixes the diagnosis
// already had (stop another process, graph pools) stay ahead of the ladder.
void swapLadder(Diagnosis& d, const ServingView& view, std::optional<uint64_t> request)
{
    std::vector<Fix> kept;
    for (Fix& fix : d.fixes) {
        if (!isTrainingFix(fix.kind))
            kept.push_back(std::move(fix));
    }
    std::vector<Fix> ladder = servingLadder(d.id, view, request);
    d.fixes.clear();
    for (Fix& fix : ladder)
        d.fixes.push_back(std::move(fix));
    for (Fix& fix : kept) {
        const bool present
            = std::any_of(d.fixes.begin(), d.fixes.end(), [&](const Fix& f) { return f.kind == fix.kind; });
        if (!present)
            d.fixes.push_back(std::move(fix));
    }
    if (d.id == DiagnosisId::Capacity && d.title == catalogueTitle(DiagnosisId::Capacity))
        d.title = "The model and its working memory do not fit on the card";
}

// From a message, capacity only says that live tensors fill the card; the engine's stage says what
// filled them (the text rules' own rule for a training phase, textranking.cpp, applied to the
// engine's stage). Below the engine's cause, unless that cause is the weights themselves.
void rankSymptomBelowEngineCause(std::vector<Diagnosis>& diagnoses, DiagnosisId cause)
{
    const auto engine
        = std::find_if(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) { return d.id == cause; });
    if (cause == DiagnosisId::Capacity || engine == diagnoses.end())
        return;
    for (Diagnosis& d : diagnoses) {
        const bool symptom = d.id == DiagnosisId::Capacity && d.title == "Live tensors fill the card";
        if (symptom && d.confidence > engine->confidence - 0.05) {
            d.confidence = std::max(0.05, engine->confidence - 0.05);
            d.evidence.push_back({ explainedByLine(cause,
                                       "live tensors fill the card, and the engine's stage that failed says what "
                                       "filled them"),
                {} });
        }
    }
}

// The training rungs out of every diagnosis, fewer samples per forward in the place of the first,
// and each diagnosis that lost one says why.
void keepFixesForEitherWorkload(std::vector<Diagnosis>& diagnoses)
{
    for (Diagnosis& d : diagnoses) {
        const auto first
            = std::find_if(d.fixes.begin(), d.fixes.end(), [](const Fix& f) { return isTrainingFix(f.kind); });
        if (first == d.fixes.end())
            continue;
        const auto at = static_cast<size_t>(first - d.fixes.begin());
        std::erase_if(d.fixes, [](const Fix& fix) { return isTrainingFix(fix.kind); });
        d.fixes.insert(d.fixes.begin() + static_cast<std::ptrdiff_t>(at), smallerBatchRung());
        d.evidence.push_back(
            { "the input does not show whether this run trains or serves a model (none of its frames or lines "
              "names a backward, an optimizer, a trainer or an inference engine): only fixes that hold "
              "for both are listed; the traceback or the log around the message would tell",
                {} });
    }
}

} // namespace

void diagnoseServing(const Case& input, CaseAnalysis& result, bool measured)
{
    // A trainer beside an engine (an RL job) is training's case, whatever the text shows.
    const bool colocated = std::any_of(result.diagnoses.begin(), result.diagnoses.end(),
        [](const Diagnosis& d) { return d.id == DiagnosisId::ColocatedEngine; });
    result.serving = servingView(input);
    if (!result.serving)
        result.serving = snapshotServing(result);
    if (!result.serving) {
        // A text that shows neither training nor an inference run (a bare OOM message): no fix
        // that holds for only one of them. A snapshot shows its phases and bands, and decides.
        if (input.snapshots.empty() && !textTrainingEvidence(input.text))
            keepFixesForEitherWorkload(result.diagnoses);
        return;
    }
    if (colocated || snapshotsTrain(result)) {
        result.serving.reset();
        return;
    }
    const ServingView& view = *result.serving;
    const bool oomInText = !input.text.oomMessages.empty();
    std::optional<uint64_t> request;
    if (oomInText)
        request = input.text.oomMessages.back().requestedBytes;

    std::erase_if(result.diagnoses, [](const Diagnosis& d) { return trainingOnly(d.id); });
    if (const auto cause = causeOf(view, oomInText)) {
        mergeDiagnoses(result.diagnoses, { engineDiagnosis(*cause, view, measured) });
        rankSymptomBelowEngineCause(result.diagnoses, cause->id);
    }
    for (Diagnosis& d : result.diagnoses)
        swapLadder(d, view, request);
    sortDiagnoses(result.diagnoses);
}

} // namespace oomlens
