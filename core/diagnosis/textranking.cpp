#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

// The ranking rule of product.md §3: a diagnosis names the cause. In evaluation with live tensors
// holding most of the card, recovering split cache buys a batch or two while the outputs kept batch
// after batch go on growing, so the phase cause ranks above fragmentation.
void rankCauseOverSymptom(const OomFacts& f, std::vector<Diagnosis>& list)
{
    const auto isCause = [](const Diagnosis& d) {
        return d.id == DiagnosisId::FirstBackward || d.id == DiagnosisId::OptimizerStep2
            || d.id == DiagnosisId::EvalAccumulation || d.id == DiagnosisId::Leak || d.id == DiagnosisId::LongestBatch;
    };
    auto phaseCase = list.end();
    for (auto it = list.begin(); it != list.end(); ++it) {
        if (isCause(*it) && (phaseCase == list.end() || it->confidence > phaseCase->confidence))
            phaseCase = it;
    }
    if (phaseCase != list.end()) {
        // From a message, capacity only says that live tensors fill the card; the phase (or the
        // log's growth, or its longest batch) says what filled it. Below that cause unless the state
        // itself was projected not to fit.
        for (auto& d : list) {
            const bool symptom = d.id == DiagnosisId::Capacity && d.title == "Live tensors fill the card";
            if (symptom && d.confidence >= phaseCase->confidence)
                d.confidence = std::max(0.05, phaseCase->confidence - 0.05);
        }
        // In evaluation one large request is the outputs gathered at once (torch.cat of every batch's
        // logits, metrics over all predictions): the gathering is the cause.
        if (phaseCase->id == DiagnosisId::EvalAccumulation) {
            for (auto& d : list) {
                if (d.id == DiagnosisId::LargeAllocation && d.confidence >= phaseCase->confidence && f.request) {
                    d.confidence = std::max(0.05, phaseCase->confidence - 0.05);
                    addEvidence(d,
                        "ranked below eval_accumulation: in evaluation a single " + formatBytes(*f.request)
                            + " request is typically the outputs of every batch gathered at once");
                }
            }
        }
    }
    if (f.phase != Phase::Eval || !f.allocated || !f.limit || safeRatio(*f.allocated, *f.limit) < 0.5)
        return;
    const auto eval = std::find_if(
        list.begin(), list.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::EvalAccumulation; });
    const auto fragmentation
        = std::find_if(list.begin(), list.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::Fragmentation; });
    if (eval == list.end() || fragmentation == list.end() || fragmentation->confidence < eval->confidence)
        return;
    fragmentation->confidence = std::max(0.05, eval->confidence - 0.05);
    addEvidence(*fragmentation,
        "ranked below eval_accumulation: live tensors take " + percentText(*f.allocated, *f.limit)
            + " of the card during evaluation; making the split cache usable would let this request through, but "
              "outputs kept batch after batch would fill it again before the evaluation ends");
}

} // namespace oomlens::textrules
