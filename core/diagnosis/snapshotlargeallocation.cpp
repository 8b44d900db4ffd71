#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

// One request too big for what the process could hold, or attention's score matrices (whose size
// grows with the square of the sequence) filling most of it. Judged against the budget, not the
// card: under a per-process limit the limit is what a tensor has to fit in.
void largeAllocation(SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (!e.capacity || *e.capacity == 0)
        return;
    const uint64_t holdable = std::min(*e.capacity, e.fixes.budget.usableBytes.value_or(*e.capacity));
    const uint64_t request = e.oom.requestedBytes;
    const double share = safeRatio(request, holdable);
    const bool attention = e.oom.stack.isValid() && e.isQuadraticStack(e.oom.stack);
    // The O(seq^2) buffers live at the failure plus the one requested: the share of the budget that
    // exists only because attention materializes its scores. That is the cause only when this work
    // never fit: after a step that completed, what changed since (a longer batch, the first
    // backward, new state) is, and the scores are how it shows.
    const bool firstRun = e.completedStepBeforeFailure() == nullptr;
    const uint64_t quadratic = attention && firstRun ? e.fixes.budget.quadraticBytes + request : 0;
    const double quadraticShare = safeRatio(quadratic, holdable);
    if (share < 0.25 && quadraticShare < 0.5)
        return;
    const double byRequest = share >= 0.25 ? 0.45 + 0.45 * clamp01((share - 0.25) / 0.5) : 0.0;
    const double byScores = quadraticShare >= 0.5 ? 0.5 + 0.4 * clamp01((quadraticShare - 0.5) / 0.4) : 0.0;
    Diagnosis d
        = makeDiagnosis(DiagnosisId::LargeAllocation, std::max(byRequest, byScores) + (attention ? 0.05 : 0.0), {});
    const std::string budgetName = holdable < *e.capacity ? "the " + formatBytes(holdable) + " this process could hold"
                                                          : "the " + formatBytes(holdable) + " card";
    e.evidence(d,
        "the failing request of " + formatBytes(request) + " is " + percentText(request, holdable) + " of " + budgetName
            + ", in " + e.where(),
        e.oom.eventIndex);
    if (attention)
        e.evidence(d,
            "it comes from attention code (softmax / score matrix): its size grows with the square of the sequence "
            "length");
    if (quadraticShare >= 0.5)
        e.evidence(d,
            "attention's O(seq^2) buffers live at the failure and the one requested add up to " + formatBytes(quadratic)
                + ", " + percentText(quadratic, holdable) + " of " + budgetName);
    d.summary = "One " + formatBytes(request) + " tensor, " + percentText(request, holdable) + " of " + budgetName
        + ", could not be placed.";
    e.fixes.budget.quadraticBytes = std::max(e.fixes.budget.quadraticBytes, attention ? request : 0);
    if (attention)
        appendFixes(d.fixes, { FixKind::Sdpa }, e.fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Sdpa, FixKind::ShorterSequences }, e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
