#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/trainingstate.h"
#include "core/units.h"

namespace oomlens::textrules {

// A traceback shows where the run failed, not what filled the card, so a phase case read from text
// stays at most 0.6: 0.35-0.45 for the phase alone, +0.1 when the card was full at the failure (the
// phase's own allocations tipped it), +0.1 for evaluation when live tensors held most of the card
// or the frames show a loop that gathers predictions.
void diagnosePhase(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    const bool cardFull = f.request && f.free && *f.free + f.reservedUnallocated.value_or(0) < *f.request;
    const double fullBonus = cardFull ? 0.1 : 0.0;
    const bool mostlyLive = f.allocated && f.limit && safeRatio(*f.allocated, *f.limit) >= 0.5;
    const std::string where = f.phaseEvidence.empty() ? std::string() : " (" + f.phaseEvidence + ")";
    switch (f.phase) {
    case Phase::Backward: {
        Diagnosis d = makeDiagnosis(DiagnosisId::FirstBackward, 0.4 + fullBonus,
            "The failure is in backward, where gradients are allocated while every saved "
            "activation is still alive; the text alone cannot tell whether it is the first step.");
        addEvidence(d, "the traceback shows the failure in backward" + where);
        out.capacityDamping = 0.85;
        appendFixes(d.fixes,
            { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, fixes);
        out.add(std::move(d));
        break;
    }
    case Phase::Optimizer: {
        const bool stateExists = f.failingFrame && updateReadsExistingState(*f.failingFrame);
        Diagnosis d = makeDiagnosis(DiagnosisId::OptimizerStep2, 0.45 + fullBonus,
            stateExists ? "The failure is in optimizer.step()'s update, after its state exists: the multi-tensor "
                          "(foreach) update makes temporaries as large as a state buffer for every parameter at "
                          "once, on top of weights, gradients and the state."
                        : "The failure is in optimizer.step(): Adam allocates its two state buffers "
                          "(8 bytes per parameter) at the first step, on top of weights and gradients.");
        if (stateExists) {
            d.title = "The optimizer's update needs room beside its state";
            addEvidence(d,
                "the failing line reads the optimizer's state rather than making it (" + f.failingFrame->function + ": "
                    + f.failingFrame->code + "): the state exists, its update's temporaries did not fit");
        } else {
            addEvidence(d, "the traceback shows the failure in the optimizer step" + where);
        }
        out.capacityDamping = 0.85;
        FixContext stepFixes = fixes;
        stepFixes.optimizerStateExists = stateExists;
        appendFixes(
            d.fixes, { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload }, stepFixes);
        out.add(std::move(d));
        break;
    }
    case Phase::Eval: {
        const bool accumulating = mentions(
            f, { "evaluation_loop", "prediction_loop", "nested_concat", "preds", "predict", "evaluate", "validat" });
        const double liveBonus = !cardFull && mostlyLive ? 0.1 : 0.0;
        Diagnosis d = makeDiagnosis(DiagnosisId::EvalAccumulation, (accumulating ? 0.5 : 0.35) + fullBonus + liveBonus,
            "The failure is in evaluation: either outputs are collected on the GPU batch after batch, or "
            "the evaluation batch is larger than training's.");
        addEvidence(d, "the traceback shows the failure in evaluation / no-grad code" + where);
        if (accumulating)
            addEvidence(d, "the traceback passes through an evaluation loop that gathers predictions");
        if (mostlyLive)
            addEvidence(d,
                "live tensors held " + formatBytes(*f.allocated) + " of the " + formatBytes(*f.limit) + " ("
                    + percentText(*f.allocated, *f.limit)
                    + ") during evaluation, which needs no gradients or optimizer state: kept outputs are the "
                      "likely filler");
        // Training-side fixes (accumulation, checkpointing, sharding) do little for evaluation.
        out.capacityDamping = 0.6;
        appendFixes(d.fixes, { FixKind::EvalAccumulation, FixKind::EvalBatchSize }, fixes);
        out.add(std::move(d));
        break;
    }
    default:
        break;
    }
}

} // namespace oomlens::textrules
