#include "core/diagnosis/catalogue.h"

#include <algorithm>
#include <cmath>

namespace oomlens {

namespace {

struct Entry
{
    DiagnosisId id;
    std::string_view title;
};

constexpr Entry entries[] = {
    { DiagnosisId::Fragmentation, "Free memory exists, but not in one piece" },
    { DiagnosisId::FirstBackward, "The forward pass fits, the first backward does not" },
    { DiagnosisId::OptimizerStep2, "The optimizer's state arrives at the first step" },
    { DiagnosisId::LongestBatch, "One batch is much larger than the rest" },
    { DiagnosisId::EvalAccumulation, "Evaluation keeps its outputs on the GPU" },
    { DiagnosisId::Leak, "Memory grows step after step" },
    { DiagnosisId::Capacity, "The training state does not fit on the card" },
    { DiagnosisId::OtherProcess, "Something else holds memory on the card" },
    { DiagnosisId::MemoryFractionCap, "A per-process memory limit, not the card, ran out" },
    { DiagnosisId::LargeAllocation, "One request is a large share of the card" },
    { DiagnosisId::HostMemory, "The host's RAM ran out, not the GPU's" },
    { DiagnosisId::PendingFrees, "Freed memory waited for another stream" },
    { DiagnosisId::CommunicationBuffers, "Collectives' buffers are kept beyond need" },
    { DiagnosisId::GraphCapture, "CUDA graph capture holds memory eager execution would reuse" },
    { DiagnosisId::ColocatedEngine, "Training and an inference engine do not both fit on the GPU" },
    { DiagnosisId::KvCacheBudget, "The engine's KV cache cannot hold what it was asked to serve" },
    { DiagnosisId::EngineBatch, "Too many tokens in flight at once for the engine's budget" },
    // Not a cause but the honest fallback when no rule above is supported by the evidence.
    { DiagnosisId::WorkingSet, "Live tensors filled what this process could hold" },
};

constexpr double maxConfidence = 0.97;

size_t catalogueIndex(DiagnosisId id)
{
    for (size_t i = 0; i < std::size(entries); ++i) {
        if (entries[i].id == id)
            return i;
    }
    return std::size(entries);
}

} // namespace

double clamp01(double value)
{
    return std::clamp(value, 0.0, 1.0);
}

std::string percentText(uint64_t part, uint64_t whole)
{
    if (whole == 0)
        return "?%";
    return std::to_string(static_cast<int>(std::lround(100.0 * static_cast<double>(part) / static_cast<double>(whole))))
        + "%";
}

double safeRatio(uint64_t part, uint64_t whole)
{
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string_view catalogueTitle(DiagnosisId id)
{
    const size_t index = catalogueIndex(id);
    return index < std::size(entries) ? entries[index].title : std::string_view();
}

Diagnosis makeDiagnosis(DiagnosisId id, double confidence, std::string summary)
{
    Diagnosis diagnosis;
    diagnosis.id = id;
    diagnosis.title = std::string(catalogueTitle(id));
    diagnosis.confidence = std::clamp(confidence, 0.0, maxConfidence);
    diagnosis.summary = std::move(summary);
    return diagnosis;
}

bool isOutsideTheWorkload(DiagnosisId id)
{
    return id == DiagnosisId::OtherProcess || id == DiagnosisId::MemoryFractionCap || id == DiagnosisId::HostMemory;
}

void sortDiagnoses(std::vector<Diagnosis>& diagnoses)
{
    std::stable_sort(diagnoses.begin(), diagnoses.end(), [](const Diagnosis& a, const Diagnosis& b) {
        // Confidences are rounded to two decimals for display; compare what the user sees.
        const long ca = std::lround(a.confidence * 100);
        const long cb = std::lround(b.confidence * 100);
        if (ca != cb)
            return ca > cb;
        return catalogueIndex(a.id) < catalogueIndex(b.id);
    });
}

void mergeDiagnoses(std::vector<Diagnosis>& into, std::vector<Diagnosis> incoming, double weight)
{
    for (auto& diagnosis : incoming) {
        auto existing
            = std::find_if(into.begin(), into.end(), [&](const Diagnosis& d) { return d.id == diagnosis.id; });
        if (existing == into.end()) {
            diagnosis.confidence = std::clamp(diagnosis.confidence * weight, 0.0, maxConfidence);
            into.push_back(std::move(diagnosis));
            continue;
        }
        // Independent sources agreeing: 1 - (1-a)(1-b), damped so two weak hints stay weak-ish.
        const double a = existing->confidence;
        const double b = diagnosis.confidence * weight;
        existing->confidence
            = std::clamp(std::max(a, b) + 0.5 * std::min(a, b) * (1.0 - std::max(a, b)), 0.0, maxConfidence);
        for (auto& evidence : diagnosis.evidence) {
            const bool seen = std::any_of(existing->evidence.begin(), existing->evidence.end(),
                [&](const Evidence& e) { return e.text == evidence.text; });
            if (!seen)
                existing->evidence.push_back(std::move(evidence));
        }
        for (auto& fix : diagnosis.fixes) {
            auto same = std::find_if(
                existing->fixes.begin(), existing->fixes.end(), [&](const Fix& f) { return f.kind == fix.kind; });
            if (same == existing->fixes.end())
                existing->fixes.push_back(std::move(fix));
            else if (!same->projectedSavingBytes && fix.projectedSavingBytes)
                *same = std::move(fix); // a measured projection beats an unmeasured one
        }
    }
}

} // namespace oomlens
