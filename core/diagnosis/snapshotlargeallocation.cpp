#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

void largeAllocation(SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (!e.capacity || *e.capacity == 0)
        return;
    const uint64_t request = e.oom.requestedBytes;
    const double share = safeRatio(request, *e.capacity);
    if (share < 0.25)
        return;
    const bool attention = e.oom.stack.isValid() && e.isQuadraticStack(e.oom.stack);
    Diagnosis d
        = makeDiagnosis("large_allocation", 0.45 + 0.45 * clamp01((share - 0.25) / 0.5) + (attention ? 0.05 : 0.0), {});
    e.evidence(d,
        "the failing request of " + formatBytes(request) + " is " + percentText(request, *e.capacity) + " of the "
            + formatBytes(*e.capacity) + " card, in " + e.where(),
        e.oom.eventIndex);
    if (attention)
        e.evidence(d,
            "it comes from attention code (softmax / score matrix): its size grows with the square of the sequence "
            "length");
    d.summary = "One " + formatBytes(request) + " tensor, " + percentText(request, *e.capacity)
        + " of the card, could not be placed.";
    e.fixes.budget.quadraticBytes = std::max(e.fixes.budget.quadraticBytes, attention ? request : 0);
    if (attention)
        appendFixes(d.fixes, { FixKind::Sdpa }, e.fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Sdpa, FixKind::ShorterSequences }, e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
