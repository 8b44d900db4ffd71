#include "core/analysis/userframe.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/growingtensor.h"
#include "core/diagnosis/snapshotrules.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

// A tensor re-made larger every step (growingtensor.h) is a leak by size: the live set grows by the
// increment each step with the batch unchanged, though every old copy is freed. The step-start
// comparison (snapshotleak.cpp) sees only the few increments a short trace holds, and no tensor
// stays behind for the kept-reference reading, so this runs after it and speaks only where it found
// nothing. 0.8: three or more copies in consecutive steps, each made while the last was live, is
// how torch.cat on one growing buffer looks, and the newest is a real share of the process.
// Buffers under 5% of what the process could hold are not what filled it.
void growingTensor(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const bool leakFound
        = std::any_of(out.begin(), out.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::Leak; });
    if (leakFound || !e.isTrainingRun())
        return;
    const auto growing = findGrowingTensor(e.device, e.oom.eventIndex);
    const uint64_t usable = *e.fixes.budget.usableBytes;
    if (!growing || growing->perStepBytes == 0 || safeRatio(growing->newestBytes, usable) < 0.05)
        return;
    const std::string label = userFrameLabel(*e.analysis.snapshot, growing->stack);
    const std::string where = label.empty() ? "one call stack" : label;
    Diagnosis d = makeDiagnosis(DiagnosisId::Leak, 0.8, {});
    e.evidence(d,
        where + " makes a new, larger copy of one tensor every training step: " + std::to_string(growing->copies)
            + " copies in steps " + std::to_string(growing->oldestStep) + " to " + std::to_string(growing->newestStep)
            + ", " + formatBytes(growing->oldestBytes) + " to " + formatBytes(growing->newestBytes) + ", about "
            + formatBytes(growing->perStepBytes) + " more per step",
        growing->oldestEvent);
    e.evidence(d,
        "each copy was allocated while the one before it was live and the old one freed after: torch.cat of the old "
        "tensor and the new rows cannot grow it in place, so no tensor outlives its step, yet the live set grows by "
        "the increment every step with the batch unchanged",
        growing->newestEvent);
    e.evidence(d,
        formatBytes(growing->newestBytes) + " live at the failure (" + percentText(growing->newestBytes, usable)
            + " of what this process could hold): at that rate, about "
            + std::to_string(growing->newestBytes / growing->perStepBytes)
            + " steps of growth; a buffer that is only ever appended to (a queue never dequeued, a history never "
              "trimmed) grows until the card is full");
    if (e.oom.freeInPoolBytes >= e.oom.requestedBytes && e.oom.largestFreeBlock < e.oom.requestedBytes)
        e.evidence(d,
            "each freed copy is one increment too small for the next, which needs a block of its own while "
            "smaller requests split the old one: the split cache ("
                + formatBytes(e.oom.freeInPoolBytes) + " free, largest block " + formatBytes(e.oom.largestFreeBlock)
                + ") comes with the growth");
    d.summary = where + " re-makes one tensor " + formatBytes(growing->perStepBytes) + " larger every step ("
        + formatBytes(growing->newestBytes)
        + " by now); nothing ever shrinks it, and the run fails once it fills "
          "the card.";
    FixContext fixes = e.fixes;
    fixes.caseSavingBytes = growing->newestBytes;
    fixes.leakIsGrowingBuffer = true;
    appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
    d.outlook = RunOutlook {};
    d.outlook->growthPerUnitBytes = growing->perStepBytes;
    d.outlook->unit = "step";
    d.outlook->leadingFixStopsGrowth = true;
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
