#include "core/diagnosis/snapshotrules.h"

#include "core/analysis/allocatorstate.h"
#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

// Temporaries made inside the optimizer step and still live: the multi-tensor update's
// intermediates, which exist only while step() runs.
uint64_t stepTemporariesAtOom(const SnapshotEvidence& e)
{
    uint64_t bytes = 0;
    for (const auto& allocation : e.device.allocations) {
        if (allocation.category == Category::Temporaries && allocation.phase == Phase::Optimizer
            && allocation.liveAfter(e.oom.eventIndex))
            bytes += allocation.requestedSize;
    }
    return bytes;
}

// The optimizer's state is older than the trace (a completed step's optimizer.step() made it) and
// the trace opens in the failing step, so no step before it is in view. The caching allocator keeps
// what it reserved: at the failing step's start the cache is the high-water mark of every step
// before it. A loop whose batches keep their size is served from that cache from its second step
// on; the one thing a completed step leaves that its predecessors' peaks did not hold is the state
// Adam creates lazily, on the first optimizer.step(), in the blocks the activations just freed.
// When the failing step needed more than that cache (live + the request) by no more than the state,
// the state alone accounts for the overflow. Null otherwise.
struct CacheBeforeFailingStep
{
    uint64_t reservedBytes = 0; // reserved right before the failing step's first event
    uint64_t demandBytes = 0; // live at the failure + the request
};

std::optional<CacheBeforeFailingStep> stateOverflowsEarlierCache(const SnapshotEvidence& e, uint64_t state)
{
    if (e.earlierStepStateBytes == 0 || state == 0 || e.oom.step < 0 || e.oom.step > e.firstTrainingStep()
        || (e.oom.phase != Phase::Forward && e.oom.phase != Phase::Backward))
        return std::nullopt;
    const StepProfile* failing = e.profile.step(e.oom.step);
    if (!failing || failing->firstEvent < 0)
        return std::nullopt;
    const AllocatorState before = allocatorStateAt(*e.analysis.snapshot, e.device, failing->firstEvent - 1);
    const uint64_t demand = e.oom.allocatedBytes + e.oom.requestedBytes;
    // Within the cache the earlier steps left, the failure is the layout's, not the size's; beyond
    // it by more than the state, something else grew too (a longer batch, a leak).
    if (demand <= before.reservedBytes || demand - before.reservedBytes > state)
        return std::nullopt;
    return CacheBeforeFailingStep { before.reservedBytes, demand };
}

} // namespace

// capacity is claimed only when the state training keeps (measured, or projected from the
// weights where the failure came before it existed) exceeds what this process could hold.
// Confidence: 0.9 when every band was measured; 0.85 projected with the precision read from
// the frames; 0.8 projected under the stated fp32 assumption (the smaller projection, so the
// claim holds whatever the precision; only the larger one exceeding is no claim). With the
// card's size unknown and the process holding implausibly little: 0.4 before training started
// (other_process is then the better reading, see processHeldImplausiblyLittle), at most 0.7
// once it trained on that share.
void capacityOrOptimizerStep2(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const uint64_t state = band(e.oom.liveByCategory, Category::OptimizerState);
    const uint64_t usable = *e.fixes.budget.usableBytes;
    const bool inFirstOptimizer
        = e.oom.phase == Phase::Optimizer && (e.oom.step < 0 || e.oom.step <= e.firstTrainingStep());
    const uint64_t fixedState = e.state.total();
    // Failing while loading, the weights so far and the request are only a lower bound of the
    // model, and any use of it needs more than its weights. When everything else live could not
    // make room for even the failing tensor, and the weights with the split cache fill what the
    // process could hold, recovering the split cache lets one more tensor through, not the model.
    const uint64_t otherLive = e.oom.allocatedBytes > band(e.oom.liveByCategory, Category::Parameters)
        ? e.oom.allocatedBytes - band(e.oom.liveByCategory, Category::Parameters)
        : 0;
    const bool weightsFillProcess = e.oom.phase == Phase::Load && otherLive < e.oom.requestedBytes
        && fixedState + e.fixes.budget.fragmentedBytes >= usable;
    if (e.state.parameters > 0 && (fixedState > usable || weightsFillProcess)) {
        double confidence = !e.state.projected()                      ? 0.9
            : e.state.precision.precision != WeightPrecision::Unknown ? 0.85
                                                                      : 0.8;
        if (e.implausiblySmall)
            confidence = std::min(confidence, e.isTrainingRun() ? 0.7 : 0.4);
        // Before the first optimizer.step() nothing shows which parameters train or which optimizer
        // steps them. When the weights and their gradients fit and only the moments Adam would keep
        // for every parameter push the state over, the claim rests on that guess: a likely reading
        // (0.55) that does not outrank what was measured (the phase that failed).
        const bool restsOnUnseenOptimizer = e.state.optimizerUnseen() && e.state.withoutUnseenOptimizer() <= usable;
        if (restsOnUnseenOptimizer)
            confidence = std::min(confidence, 0.55);
        // With the card's size known, a state that fits on the card (less a CUDA context) once
        // the memory held outside this process is back is that holder's doing, not the card's.
        const uint64_t context = e.context.message && e.context.message->selfNonPyTorchBytes
            ? *e.context.message->selfNonPyTorchBytes
            : GiB / 2;
        // Only where something did hold the rest: a load's weights so far are a lower bound.
        const bool fitsCard = e.cardTotal && fixedState + context <= *e.cardTotal && e.heldOutsideBytes();
        // Under a per-process limit the limit is the card this run was given: the rest of the card
        // was refused by the limit, not held by another process, so the claim stands.
        const bool limited = e.processLimit && *e.processLimit == usable;
        if (fitsCard && !limited)
            confidence = std::min(confidence, 0.45);
        Diagnosis d = makeDiagnosis(DiagnosisId::Capacity, confidence, {});
        e.evidence(d,
            e.state.text() + ", against " + formatBytes(usable) + " this process could hold (" + e.usableText + ")",
            e.oom.eventIndex);
        if (const std::string assumption = e.state.assumption(); !assumption.empty())
            e.evidence(d, assumption);
        if (weightsFillProcess && fixedState <= usable)
            e.evidence(d,
                "loading was not finished: the " + formatBytes(fixedState)
                    + " of weights so far (with the failing request) and the "
                    + formatBytes(e.fixes.budget.fragmentedBytes)
                    + " split in the cache fill what this process could hold; recovering the split cache lets one "
                      "more tensor through, and any use of the model needs more than its weights");
        if (e.state.gradientsProjected || e.state.optimizerProjected)
            e.evidence(d,
                "the failure came before training had built that state: it is projected from the "
                    + formatBytes(e.state.parameters) + " of weights, assuming every parameter trains");
        if (restsOnUnseenOptimizer)
            e.evidence(d,
                "the weights and their gradients, " + formatBytes(e.state.withoutUnseenOptimizer()) + ", fit in the "
                    + formatBytes(usable)
                    + "; only the optimizer state, projected for an optimizer this run has not reached yet, "
                      "pushes it over: with frozen weights (LoRA, a frozen backbone) or a lighter optimizer "
                      "the state is smaller. The first optimizer.step() or the training script settles it");
        e.evidence(d,
            "activations at the failure are " + formatBytes(band(e.oom.liveByCategory, Category::Activations))
                + ": smaller batches or checkpointing shrink only those");
        if (fitsCard && limited)
            e.evidence(d,
                "it would fit on the " + formatBytes(*e.cardTotal) + " card (" + e.cardSource
                    + ") without the per-process limit: the limit is the budget this run was given, and within it no "
                      "batch size fits (see memory_fraction_cap if the limit was not meant)");
        else if (fitsCard)
            e.evidence(d,
                "it would fit on the " + formatBytes(*e.cardTotal) + " card (" + e.cardSource
                    + "): the rest of the card was held outside this process (see other_process)");
        if (e.implausiblySmall)
            e.evidence(d,
                "the snapshot records no card size, and " + formatBytes(usable)
                    + " is less than any training GPU leaves a process: the card may be larger and partly held "
                      "by something else (see other_process)");
        const std::string holder = e.cardTotal && !limited ? "the card" : "this process";
        d.summary = "Weights, gradients and optimizer state alone need " + formatBytes(fixedState)
            + (e.state.projected() ? " once training has built them" : "") + "; " + holder + " could hold "
            + formatBytes(usable) + ", whatever the batch.";
        MemoryBudget projected = e.fixes.budget;
        CategoryBytes bands = *projected.bands;
        bands[static_cast<size_t>(Category::OptimizerState)] = e.state.optimizerState;
        bands[static_cast<size_t>(Category::Gradients)] = e.state.gradients;
        bands[static_cast<size_t>(Category::Parameters)] = e.state.parameters + e.state.masterWeights;
        projected.bands = bands;
        projected.liveBytes = 0;
        for (const uint64_t bytes : bands)
            projected.liveBytes += bytes;
        projected.request = 0;
        FixContext fixes = e.fixes;
        fixes.budget = projected;
        appendFixes(d.fixes, { FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::Lora }, fixes);
        d.outlook = RunOutlook {};
        out.push_back(std::move(d));
        return;
    }

    // The lazy-state story needs state that an optimizer step made: state made while the model and
    // its optimizer were built (ZeRO's fp32 master partitions, DeepSpeed's initialize_optimizer_states)
    // existed before any batch, and every step carried it alike.
    const int64_t stateEvent = e.profile.firstOptimizerStateEvent;
    const bool stateMadeByStep = stateEvent >= 0 && static_cast<size_t>(stateEvent) < e.device.eventPhase.size()
        && e.device.eventPhase[static_cast<size_t>(stateEvent)] == Phase::Optimizer;
    const bool stateAppearedEarlier = stateMadeByStep && e.oom.step >= 0 && e.profile.firstOptimizerStateStep >= 0
        && e.profile.firstOptimizerStateStep == e.oom.step - 1
        && e.profile.firstOptimizerStateStep <= e.firstTrainingStep();
    // demandBytes 0: not that reading (a plain struct: GCC cannot follow an optional through the branches).
    const CacheBeforeFailingStep older = !inFirstOptimizer && !stateAppearedEarlier
        ? stateOverflowsEarlierCache(e, state).value_or(CacheBeforeFailingStep {})
        : CacheBeforeFailingStep {};
    const bool olderState = older.demandBytes > 0;
    if (!inFirstOptimizer && !stateAppearedEarlier && !olderState)
        return;
    const uint64_t temporaries = inFirstOptimizer ? stepTemporariesAtOom(e) : 0;
    // The lazy-state story on the step after predicts that step: the previous one plus the state
    // that arrived. What this step needed at the failure (live + the request) beyond the previous
    // step's peak splits into the state and the rest; the state is what tipped it when it is the
    // larger part. When the rest is larger (a backward that only just fit before, a longer batch),
    // the step itself outgrew its predecessor and the state, however present, is not the cause.
    const StepProfile* previous = stateAppearedEarlier ? e.profile.step(e.oom.step - 1) : nullptr;
    const uint64_t demand = e.oom.allocatedBytes + e.oom.requestedBytes;
    const uint64_t withoutState = demand > state ? demand - state : 0;
    const uint64_t beyondPrevious = previous && demand > previous->peakLive ? demand - previous->peakLive : 0;
    const uint64_t rest = beyondPrevious > state ? beyondPrevious - state : 0;
    const bool stateExplainsStep = !previous || state >= rest;
    // In the first step: 0.8 when the step's own intermediates are measured beside a state that
    // fits, 0.75 from the phase alone. On the step after: 0.8, the state's arrival is measured;
    // 0.3 when the step would not have fit without it either (a description, not the cause). With
    // the state older than the trace: 0.5, the overflow is the state's size, but the trace cannot
    // show that the step before made it (a later step with a longer batch would look the same).
    const double confidence = olderState ? 0.5
        : !stateExplainsStep             ? 0.3
                                         : (stateAppearedEarlier || temporaries > 0 ? 0.8 : 0.75);
    Diagnosis d = makeDiagnosis(DiagnosisId::OptimizerStep2, confidence, {});
    if (stateAppearedEarlier) {
        e.evidence(d,
            "optimizer state (" + formatBytes(state) + " at the failure) first appeared in step "
                + std::to_string(e.profile.firstOptimizerStateStep) + "'s optimizer.step()",
            e.profile.firstOptimizerStateEvent);
        if (previous)
            e.evidence(d,
                "step " + std::to_string(previous->step) + " peaked at " + formatBytes(previous->peakLive)
                    + " without it; step " + std::to_string(e.oom.step) + " starts with " + formatBytes(state)
                    + " more and fails in " + std::string(phaseName(e.oom.phase)),
                previous->peakEvent);
        if (previous && !stateExplainsStep)
            e.evidence(d,
                "not what tipped it: without the " + formatBytes(state) + " of state, step "
                    + std::to_string(e.oom.step) + " would still have needed " + formatBytes(withoutState)
                    + " at the failure (live + the request), " + formatBytes(rest) + " more than the "
                    + formatBytes(previous->peakLive) + " step " + std::to_string(previous->step)
                    + " ever held: the step itself grew more than the state added");
    } else if (olderState) {
        e.evidence(d,
            "optimizer state (" + formatBytes(state) + ") is older than the trace: a completed step's optimizer.step() "
                + "created it, and the trace opens in step " + std::to_string(e.oom.step)
                + ", so it cannot show how many steps ran with it");
        e.evidence(d,
            formatBytes(older.reservedBytes) + " was reserved when step " + std::to_string(e.oom.step)
                + " began, the high-water mark of the steps before it; this step needed "
                + formatBytes(older.demandBytes) + " at the failure (live + the request), "
                + formatBytes(older.demandBytes - older.reservedBytes) + " more, no more than the " + formatBytes(state)
                + " of state: without it the step fits in what the earlier steps left",
            e.oom.eventIndex);
        e.evidence(d,
            "Adam creates its moments on the first optimizer.step(), so a loop whose batches keep their size first "
            "needs them in the step after; if this is a later step, a longer batch is the other reading");
    } else {
        e.evidence(d,
            "the OOM is in the first optimizer.step(), while Adam creates its state (" + formatBytes(state)
                + " so far)",
            e.oom.eventIndex);
    }
    if (fixedState <= usable)
        e.evidence(d,
            "the state training keeps fits: " + e.state.text() + ", " + formatBytes(usable - fixedState)
                + " less than the " + formatBytes(usable) + " this process could hold");
    if (temporaries > 0)
        e.evidence(d,
            formatBytes(temporaries)
                + " of the step's own intermediates (multi-tensor _foreach_ results, freed when step() "
                  "returns) were live at the failure, plus the "
                + formatBytes(e.oom.requestedBytes) + " request");
    e.evidence(d, "live at the failure: " + e.bandsText());
    d.summary = temporaries > 0
        ? "The first optimizer.step() creates Adam's state and, on the multi-tensor path, intermediates for a "
          "whole parameter group at once: "
            + formatBytes(temporaries) + " of them did not fit beside the state, which itself fits."
        : "Step 1 fit; Adam's state, created at the first optimizer.step(), is the extra "
            + formatBytes(std::max(state, e.state.optimizerState)) + " that the next steps cannot hold.";
    FixContext fixes = e.fixes;
    if (temporaries > 0)
        fixes.caseSavingBytes = temporaries;
    appendFixes(d.fixes,
        { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::MicroBatch, FixKind::Bf16, FixKind::Zero },
        fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
