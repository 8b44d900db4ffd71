#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

namespace oomlens::snapshotrules {

// No specific cause measured: the working set simply outgrew what the process could hold.
// Not `capacity`: that names the state training keeps, which was not shown to be too big.
// 0.4: a description of the failure, not a cause.
void workingSet(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    Diagnosis d = makeDiagnosis(DiagnosisId::WorkingSet, 0.4, {});
    e.evidence(d, "at the OOM in " + e.where() + ": " + e.bandsText(), e.oom.eventIndex);
    e.evidence(d,
        "the " + formatBytes(e.oom.requestedBytes) + " request found " + formatBytes(e.oom.deviceFreeBytes)
            + " free on the card and " + formatBytes(e.fixes.budget.fragmentedBytes) + " unused in the cache");
    if (e.state.total() <= *e.fixes.budget.usableBytes)
        e.evidence(d,
            "the state training keeps fits (" + e.state.text() + " of " + formatBytes(*e.fixes.budget.usableBytes)
                + "): what did not fit comes and goes with the batch");
    d.summary = "No single cause stands out: the live tensors outgrew what this process could hold. The "
                "projected savings below are measured from the bands.";
    appendLadder(d.fixes, e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
