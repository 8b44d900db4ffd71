#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

namespace oomlens::snapshotrules {

void memoryFraction(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const uint64_t segment = e.requestSegmentBytes();
    if (!e.limitRefusedSegment())
        return;
    // The caching allocator asks the driver for that segment before it gives up; with the driver
    // reporting several segments' worth free, only a limit refuses it. 0.6 when free barely
    // covers the segment (a race with another process reads the same), rising to 0.9 at four
    // segments' worth and more.
    const double headroom = safeRatio(e.oom.deviceFreeBytes, segment);
    Diagnosis d = makeDiagnosis(DiagnosisId::MemoryFractionCap, 0.6 + 0.3 * clamp01((headroom - 1.0) / 3.0), {});
    e.evidence(d,
        "the driver reported " + formatBytes(e.oom.deviceFreeBytes) + " free at the OOM, more than the "
            + formatBytes(e.oom.requestedBytes) + " requested: only a per-process limit refuses that",
        e.oom.eventIndex);
    d.summary = "The card had room for the request; a per-process memory fraction refused it.";
    appendFixes(d.fixes, { FixKind::MemoryFraction }, e.fixes);
    d.outlook = RunOutlook {};
    d.outlook->leadingFixRaisesCeiling = true;
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
