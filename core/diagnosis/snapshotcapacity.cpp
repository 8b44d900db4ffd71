#include "core/diagnosis/snapshotrules.h"

#include "core/analysis/allocatorstate.h"
#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
#include <optional>

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

// What the capacity claim rests on: the state training keeps against what the process could hold.
struct CapacityReading
{
    uint64_t usable = 0;
    uint64_t fixedState = 0;
    // Failing while loading, the weights so far and the request are only a lower bound of the
    // model, and any use of it needs more than its weights. When everything else live could not
    // make room for even the failing tensor, and the weights with the split cache fill what the
    // process could hold, recovering the split cache lets one more tensor through, not the model.
    bool weightsFillProcess = false;
    // Before the first optimizer.step() nothing shows which parameters train or which optimizer
    // steps them: the weights and their gradients fit, and only Adam's projected moments push over.
    bool restsOnUnseenOptimizer = false;
    // With the card's size known, a state that fits on the card (less a CUDA context) once the
    // memory held outside this process is back is that holder's doing, not the card's. Only where
    // something did hold the rest: a load's weights so far are a lower bound.
    bool fitsCard = false;
    // Under a per-process limit the limit is the card this run was given: the rest of the card
    // was refused by the limit, not held by another process, so the claim stands.
    bool limited = false;
};

CapacityReading readCapacity(const SnapshotEvidence& e)
{
    CapacityReading r;
    r.usable = *e.fixes.budget.usableBytes;
    r.fixedState = e.state.total();
    const uint64_t parameters = band(e.oom.liveByCategory, Category::Parameters);
    const uint64_t otherLive = e.oom.allocatedBytes > parameters ? e.oom.allocatedBytes - parameters : 0;
    r.weightsFillProcess = e.oom.phase == Phase::Load && otherLive < e.oom.requestedBytes
        && r.fixedState + e.fixes.budget.fragmentedBytes >= r.usable;
    r.restsOnUnseenOptimizer = e.state.optimizerUnseen() && e.state.withoutUnseenOptimizer() <= r.usable;
    const uint64_t context = e.context.message && e.context.message->selfNonPyTorchBytes
        ? *e.context.message->selfNonPyTorchBytes
        : GiB / 2;
    r.fitsCard = e.cardTotal && r.fixedState + context <= *e.cardTotal && e.heldOutsideBytes();
    r.limited = e.processLimit && *e.processLimit == r.usable;
    return r;
}

bool capacityClaimed(const SnapshotEvidence& e, const CapacityReading& r)
{
    return e.state.parameters > 0 && (r.fixedState > r.usable || r.weightsFillProcess);
}

// 0.9 when every band was measured; 0.85 projected with the precision read from the frames; 0.8
// projected under the stated fp32 assumption. The unseen optimizer caps it at a likely reading
// (0.55) that does not outrank what was measured (the phase that failed).
double capacityConfidence(const SnapshotEvidence& e, const CapacityReading& r)
{
    double confidence = !e.state.projected()                      ? 0.9
        : e.state.precision.precision != WeightPrecision::Unknown ? 0.85
                                                                  : 0.8;
    if (e.implausiblySmall)
        confidence = std::min(confidence, e.isTrainingRun() ? 0.7 : 0.4);
    if (r.restsOnUnseenOptimizer)
        confidence = std::min(confidence, 0.55);
    if (r.fitsCard && !r.limited)
        confidence = std::min(confidence, 0.45);
    return confidence;
}

// How the state compares with the process: measured or projected, and what it assumed.
void explainCapacityState(const SnapshotEvidence& e, const CapacityReading& r, Diagnosis& d)
{
    e.evidence(d,
        e.state.text() + ", against " + formatBytes(r.usable) + " this process could hold (" + e.usableText + ")",
        e.oom.eventIndex);
    if (const std::string assumption = e.state.assumption(); !assumption.empty())
        e.evidence(d, assumption);
    if (r.weightsFillProcess && r.fixedState <= r.usable)
        e.evidence(d,
            "loading was not finished: the " + formatBytes(r.fixedState)
                + " of weights so far (with the failing request) and the " + formatBytes(e.fixes.budget.fragmentedBytes)
                + " split in the cache fill what this process could hold; recovering the split cache lets one "
                  "more tensor through, and any use of the model needs more than its weights");
    if (e.state.gradientsProjected || e.state.optimizerProjected)
        e.evidence(d,
            "the failure came before training had built that state: it is projected from the "
                + formatBytes(e.state.parameters) + " of weights, assuming every parameter trains");
    if (r.restsOnUnseenOptimizer)
        e.evidence(d,
            "the weights and their gradients, " + formatBytes(e.state.withoutUnseenOptimizer()) + ", fit in the "
                + formatBytes(r.usable)
                + "; only the optimizer state, projected for an optimizer this run has not reached yet, "
                  "pushes it over: with frozen weights (LoRA, a frozen backbone) or a lighter optimizer "
                  "the state is smaller. The first optimizer.step() or the training script settles it");
    e.evidence(d,
        "activations at the failure are " + formatBytes(band(e.oom.liveByCategory, Category::Activations))
            + ": smaller batches or checkpointing shrink only those");
}

// Where the card's own size says otherwise: a per-process limit, memory held outside, no card size.
void explainCapacityCard(const SnapshotEvidence& e, const CapacityReading& r, Diagnosis& d)
{
    if (r.fitsCard && r.limited)
        e.evidence(d,
            "it would fit on the " + formatBytes(*e.cardTotal) + " card (" + e.cardSource
                + ") without the per-process limit: the limit is the budget this run was given, and within it no "
                  "batch size fits (see memory_fraction_cap if the limit was not meant)");
    else if (r.fitsCard)
        e.evidence(d,
            "it would fit on the " + formatBytes(*e.cardTotal) + " card (" + e.cardSource
                + "): the rest of the card was held outside this process (see other_process)");
    if (e.implausiblySmall)
        e.evidence(d,
            "the snapshot records no card size, and " + formatBytes(r.usable)
                + " is less than any training GPU leaves a process: the card may be larger and partly held "
                  "by something else (see other_process)");
}

// The fixes are sized against the state training keeps, not the failing moment's bands.
void addCapacityFixes(const SnapshotEvidence& e, Diagnosis& d)
{
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
}

Diagnosis capacity(const SnapshotEvidence& e, const CapacityReading& r)
{
    Diagnosis d = makeDiagnosis(DiagnosisId::Capacity, capacityConfidence(e, r), {});
    explainCapacityState(e, r, d);
    explainCapacityCard(e, r, d);
    const std::string holder = e.cardTotal && !r.limited ? "the card" : "this process";
    d.summary = "Weights, gradients and optimizer state alone need " + formatBytes(r.fixedState)
        + (e.state.projected() ? " once training has built them" : "") + "; " + holder + " could hold "
        + formatBytes(r.usable) + ", whatever the batch.";
    addCapacityFixes(e, d);
    d.outlook = RunOutlook {};
    return d;
}

// Which reading of optimizer_step2 applies, and the measurements it rests on.
struct Step2Reading
{
    uint64_t state = 0; // optimizer state live at the failure
    bool inFirstOptimizer = false; // failing inside the first optimizer.step()
    bool stateAppearedEarlier = false; // the step before made the state
    CacheBeforeFailingStep older; // demandBytes 0: the state is not older than the trace's view
    uint64_t temporaries = 0;
    const StepProfile* previous = nullptr;
    uint64_t withoutState = 0; // what the failing step needed less the state
    uint64_t rest = 0; // what it needed beyond the previous peak, less the state
    bool stateExplainsStep = true;
};

// The lazy-state story needs state that an optimizer step made: state made while the model and
// its optimizer were built (ZeRO's fp32 master partitions, DeepSpeed's initialize_optimizer_states)
// existed before any batch, and every step carried it alike.
bool stateAppearedInStepBefore(const SnapshotEvidence& e)
{
    const int64_t stateEvent = e.profile.firstOptimizerStateEvent;
    const bool stateMadeByStep = stateEvent >= 0 && static_cast<size_t>(stateEvent) < e.device.eventPhase.size()
        && e.device.eventPhase[static_cast<size_t>(stateEvent)] == Phase::Optimizer;
    return stateMadeByStep && e.oom.step >= 0 && e.profile.firstOptimizerStateStep >= 0
        && e.profile.firstOptimizerStateStep == e.oom.step - 1
        && e.profile.firstOptimizerStateStep <= e.firstTrainingStep();
}

// The lazy-state story on the step after predicts that step: the previous one plus the state
// that arrived. What this step needed at the failure (live + the request) beyond the previous
// step's peak splits into the state and the rest; the state is what tipped it when it is the
// larger part. When the rest is larger (a backward that only just fit before, a longer batch),
// the step itself outgrew its predecessor and the state, however present, is not the cause.
std::optional<Step2Reading> readOptimizerStep2(const SnapshotEvidence& e)
{
    Step2Reading r;
    r.state = band(e.oom.liveByCategory, Category::OptimizerState);
    r.inFirstOptimizer = e.oom.phase == Phase::Optimizer && (e.oom.step < 0 || e.oom.step <= e.firstTrainingStep());
    r.stateAppearedEarlier = stateAppearedInStepBefore(e);
    // A plain struct: GCC cannot follow an optional through the branches.
    if (!r.inFirstOptimizer && !r.stateAppearedEarlier)
        r.older = stateOverflowsEarlierCache(e, r.state).value_or(CacheBeforeFailingStep {});
    if (!r.inFirstOptimizer && !r.stateAppearedEarlier && r.older.demandBytes == 0)
        return std::nullopt;
    r.temporaries = r.inFirstOptimizer ? stepTemporariesAtOom(e) : 0;
    r.previous = r.stateAppearedEarlier ? e.profile.step(e.oom.step - 1) : nullptr;
    const uint64_t demand = e.oom.allocatedBytes + e.oom.requestedBytes;
    r.withoutState = demand > r.state ? demand - r.state : 0;
    const uint64_t beyondPrevious = r.previous && demand > r.previous->peakLive ? demand - r.previous->peakLive : 0;
    r.rest = beyondPrevious > r.state ? beyondPrevious - r.state : 0;
    r.stateExplainsStep = !r.previous || r.state >= r.rest;
    return r;
}

// In the first step: 0.8 when the step's own intermediates are measured beside a state that
// fits, 0.75 from the phase alone. On the step after: 0.8, the state's arrival is measured;
// 0.3 when the step would not have fit without it either (a description, not the cause). With
// the state older than the trace: 0.5, the overflow is the state's size, but the trace cannot
// show that the step before made it (a later step with a longer batch would look the same).
double step2Confidence(const Step2Reading& r)
{
    if (r.older.demandBytes > 0)
        return 0.5;
    if (!r.stateExplainsStep)
        return 0.3;
    return r.stateAppearedEarlier || r.temporaries > 0 ? 0.8 : 0.75;
}

void explainStateFromStepBefore(const SnapshotEvidence& e, const Step2Reading& r, Diagnosis& d)
{
    e.evidence(d,
        "optimizer state (" + formatBytes(r.state) + " at the failure) first appeared in step "
            + std::to_string(e.profile.firstOptimizerStateStep) + "'s optimizer.step()",
        e.profile.firstOptimizerStateEvent);
    if (!r.previous)
        return;
    e.evidence(d,
        "step " + std::to_string(r.previous->step) + " peaked at " + formatBytes(r.previous->peakLive)
            + " without it; step " + std::to_string(e.oom.step) + " starts with " + formatBytes(r.state)
            + " more and fails in " + std::string(phaseName(e.oom.phase)),
        r.previous->peakEvent);
    if (!r.stateExplainsStep)
        e.evidence(d,
            "not what tipped it: without the " + formatBytes(r.state) + " of state, step " + std::to_string(e.oom.step)
                + " would still have needed " + formatBytes(r.withoutState) + " at the failure (live + the request), "
                + formatBytes(r.rest) + " more than the " + formatBytes(r.previous->peakLive) + " step "
                + std::to_string(r.previous->step) + " ever held: the step itself grew more than the state added");
}

void explainStateOlderThanTrace(const SnapshotEvidence& e, const Step2Reading& r, Diagnosis& d)
{
    const CacheBeforeFailingStep& older = r.older;
    e.evidence(d,
        "optimizer state (" + formatBytes(r.state) + ") is older than the trace: a completed step's optimizer.step() "
            + "created it, and the trace opens in step " + std::to_string(e.oom.step)
            + ", so it cannot show how many steps ran with it");
    e.evidence(d,
        formatBytes(older.reservedBytes) + " was reserved when step " + std::to_string(e.oom.step)
            + " began, the high-water mark of the steps before it; this step needed " + formatBytes(older.demandBytes)
            + " at the failure (live + the request), " + formatBytes(older.demandBytes - older.reservedBytes)
            + " more, no more than the " + formatBytes(r.state)
            + " of state: without it the step fits in what the earlier steps left",
        e.oom.eventIndex);
    e.evidence(d,
        "Adam creates its moments on the first optimizer.step(), so a loop whose batches keep their size first "
        "needs them in the step after; if this is a later step, a longer batch is the other reading");
}

// Whether the state training keeps fits, the step's own intermediates, and the bands.
void explainStep2Measurements(const SnapshotEvidence& e, const Step2Reading& r, Diagnosis& d)
{
    const uint64_t usable = *e.fixes.budget.usableBytes;
    const uint64_t fixedState = e.state.total();
    if (fixedState <= usable)
        e.evidence(d,
            "the state training keeps fits: " + e.state.text() + ", " + formatBytes(usable - fixedState)
                + " less than the " + formatBytes(usable) + " this process could hold");
    if (r.temporaries > 0)
        e.evidence(d,
            formatBytes(r.temporaries)
                + " of the step's own intermediates (multi-tensor _foreach_ results, freed when step() "
                  "returns) were live at the failure, plus the "
                + formatBytes(e.oom.requestedBytes) + " request");
    e.evidence(d, "live at the failure: " + e.bandsText());
}

Diagnosis optimizerStep2(const SnapshotEvidence& e, const Step2Reading& r)
{
    Diagnosis d = makeDiagnosis(DiagnosisId::OptimizerStep2, step2Confidence(r), {});
    if (r.stateAppearedEarlier)
        explainStateFromStepBefore(e, r, d);
    else if (r.older.demandBytes > 0)
        explainStateOlderThanTrace(e, r, d);
    else
        e.evidence(d,
            "the OOM is in the first optimizer.step(), while Adam creates its state (" + formatBytes(r.state)
                + " so far)",
            e.oom.eventIndex);
    explainStep2Measurements(e, r, d);
    d.summary = r.temporaries > 0
        ? "The first optimizer.step() creates Adam's state and, on the multi-tensor path, intermediates for a "
          "whole parameter group at once: "
            + formatBytes(r.temporaries) + " of them did not fit beside the state, which itself fits."
        : "Step 1 fit; Adam's state, created at the first optimizer.step(), is the extra "
            + formatBytes(std::max(r.state, e.state.optimizerState)) + " that the next steps cannot hold.";
    FixContext fixes = e.fixes;
    if (r.temporaries > 0)
        fixes.caseSavingBytes = r.temporaries;
    appendFixes(d.fixes,
        { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::MicroBatch, FixKind::Bf16, FixKind::Zero },
        fixes);
    d.outlook = dynamicOutlook();
    return d;
}

} // namespace

// capacity is claimed only when the state training keeps (measured, or projected from the
// weights where the failure came before it existed) exceeds what this process could hold.
// Confidence: 0.9 when every band was measured; 0.85 projected with the precision read from
// the frames; 0.8 projected under the stated fp32 assumption (the smaller projection, so the
// claim holds whatever the precision; only the larger one exceeding is no claim). With the
// card's size unknown and the process holding implausibly little: 0.4 before training started
// (other_process is then the better reading, see processHeldImplausiblyLittle), at most 0.7
// once it trained on that share. Otherwise optimizer_step2 where the optimizer's lazy state
// tipped the step.
void capacityOrOptimizerStep2(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (const CapacityReading reading = readCapacity(e); capacityClaimed(e, reading)) {
        out.push_back(capacity(e, reading));
        return;
    }
    if (const std::optional<Step2Reading> reading = readOptimizerStep2(e))
        out.push_back(optimizerStep2(e, *reading));
}

} // namespace oomlens::snapshotrules
