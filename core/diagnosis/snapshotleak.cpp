#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/keptperstep.h"
#include "core/diagnosis/leakdetection.h"
#include "core/units.h"

namespace oomlens::snapshotrules {

namespace {

// A leak adds to every step while the work stays the same, so a run without it repeats a step that
// already completed under the same limits: stopping it fits the run, whatever the budget arithmetic
// at the failure says (that counts the cache the grown live set split as blocked, which a run that
// never grew would not have split). Empty when no training step completed before the failing one.
std::string completedStepOfTheSameWork(const SnapshotEvidence& e)
{
    const StepProfile* step = e.completedStepBeforeFailure();
    if (!step)
        return {};
    return "without the leak every step repeats step " + std::to_string(step->step)
        + ", which completed under the same limit with " + formatBytes(step->peakLive) + " live at its peak";
}

// A trace too short to compare step starts: the leak is read from what it kept (keptperstep.h).
// 0.8: many same-sized tensors from one line of code that outlived their steps, the trace showing
// that line still adding one set per step and freeing none, is what a kept reference looks like;
// a cache (which evicts) and a step's own activations (made inside it) are ruled out. 0.7 where
// the trace, shorter than a step, cannot show the line adding: the live set alone (one size, one
// line of the loop itself, none made or freed in view, more than the request lacked) is the
// evidence, and a deliberately GPU-resident collection (a preloaded dataset) would look the same.
// Kept tensors under 5% of what the process could hold are not what filled it.
bool keptTensorsLeak(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const uint64_t usable = *e.fixes.budget.usableBytes;
    const uint64_t needed = e.oom.allocatedBytes + e.oom.requestedBytes;
    // A reference kept per training step: read from the live set alone only where a training step
    // failed (keptperstep.h).
    const bool inTrainingStep = e.isTrainingRun()
        && (e.oom.phase == Phase::Forward || e.oom.phase == Phase::Backward || e.oom.phase == Phase::Optimizer
            || e.oom.phase == Phase::Data);
    const auto kept = findKeptPerStep(*e.analysis.snapshot, e.device, e.profile, e.oom.eventIndex,
        inTrainingStep ? std::optional<uint64_t>(needed > usable ? needed - usable : 0) : std::nullopt);
    if (!kept || kept->perStepBytes() < MiB || safeRatio(kept->liveBytes(), usable) < 0.05)
        return false;
    Diagnosis d = makeDiagnosis(DiagnosisId::Leak, kept->rateUnseen ? 0.7 : 0.8, {});
    const std::string where = kept->where.empty() ? "one call stack" : kept->where;
    e.evidence(d,
        std::to_string(kept->live) + " tensors of " + formatBytes(kept->tensorBytes) + " from " + where
            + " are live at the failure, " + formatBytes(kept->liveBytes()) + " ("
            + percentText(kept->liveBytes(), usable)
            + " of what this process could hold), besides weights, gradients and optimizer state",
        e.oom.eventIndex);
    if (kept->rateUnseen) {
        e.evidence(d,
            "all of them are older than the trace and none was freed in it; that line is the training loop's own "
            "code, outside the model and the optimizer: a reference kept per step (a list of outputs) leaves "
            "exactly this, one tensor per step that ran; without them the failing request would have fit");
        e.evidence(d,
            "the trace holds less than one step before the failure, so it cannot show the line adding; if it adds "
            "one per step, the "
                + std::to_string(kept->live) + " are about " + std::to_string(kept->live) + " steps' worth");
    } else {
        e.evidence(d,
            std::to_string(kept->olderThanStep) + " of them were made before step " + std::to_string(e.oom.step)
                + " began and outlived their step; a loop that keeps nothing frees every step's tensors by its end");
        e.evidence(d,
            "the trace shows that code adding " + std::to_string(kept->perStep) + " per step ("
                + formatBytes(kept->perStepBytes()) + ") and freeing none of them: the "
                + std::to_string(kept->olderThanStep) + " older ones are about "
                + std::to_string(kept->olderThanStep / std::max(1, kept->perStep)) + " steps' worth",
            kept->latestEvent);
    }
    if (const uint64_t spare = usable > e.oom.allocatedBytes ? usable - e.oom.allocatedBytes : 0;
        spare >= kept->perStepBytes())
        e.evidence(d,
            "at " + formatBytes(kept->perStepBytes()) + " per step, the " + formatBytes(spare)
                + " this process had left lasts about " + std::to_string(spare / kept->perStepBytes())
                + " more steps, whatever else is fixed");
    d.summary = kept->rateUnseen ? std::to_string(kept->live) + " tensors of " + formatBytes(kept->tensorBytes)
            + " from " + where + " stay alive (" + formatBytes(kept->liveBytes())
            + "), as a reference kept every step leaves them; the run fails once they add up."
                                 : "Every step keeps " + formatBytes(kept->perStepBytes()) + " more alive from " + where
            + " (" + formatBytes(kept->liveBytes()) + " by now); the run fails once that adds up.";
    FixContext fixes = e.fixes;
    fixes.caseSavingBytes = kept->liveBytes();
    fixes.caseFitsBecause = completedStepOfTheSameWork(e);
    appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
    d.outlook = RunOutlook {};
    d.outlook->growthPerUnitBytes = kept->perStepBytes();
    d.outlook->unit = "step";
    d.outlook->leadingFixStopsGrowth = true;
    out.push_back(std::move(d));
    return true;
}

} // namespace

// Live memory at matching points of successive steps (leakdetection.h). Confidence: 0.85 when
// every one of at least three comparisons rises, 0.7 when most do; a growth under 1% of what
// the process could hold is noise next to the failure and not reported. Fewer than three
// comparisons: the tensors the leak kept say more, when they show (keptTensorsLeak).
void leak(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const auto finding = findLeak(*e.analysis.snapshot, e.device, e.profile, e.oom.eventIndex, e.firstTrainingStep());
    const bool grows
        = finding && finding->growth >= MiB && safeRatio(finding->growth, *e.fixes.budget.usableBytes) >= 0.01;
    if ((!grows || finding->comparisons < 3) && keptTensorsLeak(e, out))
        return;
    if (!grows)
        return;
    const bool steady = finding->rising == finding->comparisons && finding->comparisons >= 3;
    Diagnosis d = makeDiagnosis(DiagnosisId::Leak, steady ? 0.85 : 0.7, {});
    e.evidence(d,
        "memory live at " + finding->point
            + ", besides weights, gradients and optimizer state, grows: " + formatBytes(finding->live.front()) + " to "
            + formatBytes(finding->live.back()) + " over " + std::to_string(finding->comparisons) + " steps ("
            + formatSignedBytes(static_cast<int64_t>(finding->growth)) + "), about "
            + formatBytes(finding->slopePerStep) + " per step (the median change)",
        finding->events.back());
    e.evidence(d,
        std::to_string(finding->rising) + " of " + std::to_string(finding->comparisons)
            + " step-over-step comparisons rise; a loop that keeps nothing starts every step at the same level",
        finding->events[1]);
    std::string sites;
    for (size_t i = 0; i < finding->growingSites.size() && i < 3; ++i) {
        const auto& site = finding->growingSites[i];
        sites += (sites.empty() ? "" : "; ") + site.where + " (" + std::to_string(site.count) + " allocations, "
            + formatBytes(site.bytes) + ")";
    }
    if (!sites.empty())
        e.evidence(d, "made since the first of those points and still live: " + sites);
    if (const uint64_t spare
        = *e.fixes.budget.usableBytes > e.oom.allocatedBytes ? *e.fixes.budget.usableBytes - e.oom.allocatedBytes : 0;
        spare > 0)
        e.evidence(d,
            "at " + formatBytes(finding->slopePerStep) + " per step, the " + formatBytes(spare)
                + " this process had left lasts about " + std::to_string(spare / finding->slopePerStep)
                + " more steps, whatever else is fixed");
    d.summary = "Something keeps about " + formatBytes(finding->slopePerStep)
        + " per step alive; the run fails once that adds up.";
    FixContext fixes = e.fixes;
    fixes.caseSavingBytes = finding->growth;
    fixes.caseFitsBecause = completedStepOfTheSameWork(e);
    appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
    d.outlook = RunOutlook {};
    d.outlook->growthPerUnitBytes = finding->slopePerStep;
    d.outlook->unit = "step";
    d.outlook->leadingFixStopsGrowth = true;
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
