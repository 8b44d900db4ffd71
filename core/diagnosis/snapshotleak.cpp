#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/leakdetection.h"
#include "core/units.h"

namespace oomlens::snapshotrules {

// Live memory at matching points of successive steps (leakdetection.h). Confidence: 0.85 when
// every one of at least three comparisons rises, 0.7 when most do; a growth under 1% of what
// the process could hold is noise next to the failure and not reported.
void leak(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const auto finding = findLeak(*e.analysis.snapshot, e.device, e.profile, e.oom.eventIndex, e.firstTrainingStep());
    if (!finding || finding->growth < MiB || safeRatio(finding->growth, *e.fixes.budget.usableBytes) < 0.01)
        return;
    const bool steady = finding->rising == finding->comparisons && finding->comparisons >= 3;
    Diagnosis d = makeDiagnosis("leak", steady ? 0.85 : 0.7, {});
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
    appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
    d.outlook = RunOutlook {};
    d.outlook->growthPerUnitBytes = finding->slopePerStep;
    d.outlook->unit = "step";
    d.outlook->leadingFixStopsGrowth = true;
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
