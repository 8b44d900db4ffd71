#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

namespace oomlens::snapshotrules {

namespace {

// A later backward that fails where the step before peaked in its own backward, needing at the
// failure at least what that peak held, is the same overflow one step on: the earlier backward
// only just fit (often after the allocator emptied its cache), this one did not. Nothing grew
// in between that another rule would name first (leak, a longer batch, the lazy state: each
// judged on its own evidence). Returns that earlier step, or null.
const StepProfile* sameOverflowOneStepOn(const SnapshotEvidence& e, bool first)
{
    // Only a step the trace shows from its start has a known peak: step 0 is what the trace opened
    // in, and when it holds a backward it is the tail of a step that began before the trace.
    const StepProfile* previous = first ? nullptr : e.profile.step(e.oom.step - 1);
    const bool previousPeakedInBackward = previous && previous->step >= 1 && previous->complete
        && previous->peakEvent >= 0 && static_cast<size_t>(previous->peakEvent) < e.device.eventPhase.size()
        && e.device.eventPhase[static_cast<size_t>(previous->peakEvent)] == Phase::Backward;
    // And the working set itself reached the ceiling: the cache's free blocks together could not
    // have served the request even unsplit (when they could, the layout failed, not the size).
    // Nothing carried over from one step to the next either: the failing step began with no more
    // activations, temporaries and inputs than its predecessor did (a leak would). Only two steps
    // that both follow a step compare like for like: the first training step begins with nothing
    // left over, later ones with the last batch's tensors still bound to Python names until
    // reassigned, so after the first step the comparison says nothing.
    const StepProfile* failing = e.profile.step(e.oom.step);
    const bool previousIsFirst = previous && previous->step <= e.firstTrainingStep();
    // The same working set: the activations and temporaries live at the failure are no more than
    // the earlier backward held at its peak (which also held a request like this one). More than
    // that, the batch or something else grew since, and that is the cause to name.
    const uint64_t dynamicNow = dynamicBandBytes(e.oom.liveByCategory);
    const bool sameOverflowAgain = previousPeakedInBackward && failing
        && (previousIsFirst || failing->startDynamic() <= previous->startDynamic())
        && e.oom.allocatedBytes + e.oom.requestedBytes >= previous->peakLive && dynamicNow <= previous->peakDynamic
        && e.oom.freeInPoolBytes < e.oom.requestedBytes;
    return sameOverflowAgain ? previous : nullptr;
}

void firstBackwardEvidence(
    const SnapshotEvidence& e, uint64_t state, uint64_t earlierState, const StepProfile* previous, Diagnosis& d)
{
    e.evidence(
        d, "the OOM is in " + e.where() + (state == 0 ? ", before any optimizer state exists" : ""), e.oom.eventIndex);
    e.evidence(d, "live at the failure: " + e.bandsText());
    if (earlierState > 0)
        e.evidence(d,
            formatBytes(earlierState)
                + " of optimizer state that optimizer.step() creates on its first call is older than the trace: "
                  "a step completed before it began, so this is not the run's first backward");
    if (previous)
        e.evidence(d,
            "step " + std::to_string(previous->step) + " peaked in its backward at " + formatBytes(previous->peakLive)
                + "; this backward needed " + formatBytes(e.oom.allocatedBytes + e.oom.requestedBytes)
                + " (live + the request) at the failure: the same backward working set, one step on",
            previous->peakEvent);
    if (const StepProfile* step = e.profile.step(e.oom.step); step && step->peakEvent >= 0)
        e.evidence(d,
            "activations saved by the forward pass stay live while backward allocates gradients: "
                + formatBytes(band(e.oom.liveByCategory, Category::Activations)) + " of activations and "
                + formatBytes(band(e.oom.liveByCategory, Category::Gradients)) + " of gradients");
    if (e.state.total() <= *e.fixes.budget.usableBytes && e.state.ifHalfBytes > *e.fixes.budget.usableBytes)
        e.evidence(d,
            "if the weights are 16-bit (the frames do not tell), training with fp32 master weights and Adam would "
            "keep "
                + formatBytes(e.state.ifHalfBytes) + ", more than the " + formatBytes(*e.fixes.budget.usableBytes)
                + " this process could hold: then no activation fix is enough");
}

} // namespace

void firstBackward(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (e.oom.phase != Phase::Backward)
        return;
    const bool firstInTrace = e.oom.step < 0 || e.oom.step <= e.firstTrainingStep();
    // Optimizer state a completed step created, older than the trace: the trace's first step is not
    // the run's (earlierstep.h).
    const uint64_t earlierState = firstInTrace ? e.earlierStepStateBytes : 0;
    const bool first = firstInTrace && earlierState == 0;
    const uint64_t state = band(e.oom.liveByCategory, Category::OptimizerState);
    const StepProfile* previousOverflow = sameOverflowOneStepOn(e, first);
    // 0.85 in the first backward before any state exists, 0.7 with state, 0.6 for the same
    // backward overflow one step on. A later backward with neither says only where the working set
    // overflowed, which working_set describes at 0.4; the first-backward story does not hold there
    // (a step completed before), so 0.35, below that description.
    const double confidence = first ? (state == 0 ? 0.85 : 0.7) : (previousOverflow ? 0.6 : 0.35);
    Diagnosis d = makeDiagnosis(DiagnosisId::FirstBackward, confidence, {});
    firstBackwardEvidence(e, state, earlierState, previousOverflow, d);
    d.summary = "The forward pass fit; backward then needs the saved activations and the new gradients at once, "
                "and that did not fit.";
    appendFixes(
        d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
