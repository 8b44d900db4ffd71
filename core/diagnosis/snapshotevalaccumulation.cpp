#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
#include <unordered_map>

namespace oomlens::snapshotrules {

// Evaluation outputs kept on the GPU: each batch adds about the same bytes, so the pile grows
// until the evaluation ends or the card is full. The batches are counted as the repeats of the
// most repeated allocation site among what evaluation left live.
void evalAccumulation(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (e.oom.phase != Phase::Eval && e.profile.evalRetainedCount == 0)
        return;
    const uint64_t live = e.fixes.budget.liveBytes;
    const bool retains = e.profile.evalRetainedCount >= 3 && safeRatio(e.profile.evalRetainedBytes, live) >= 0.15;
    if (e.oom.phase != Phase::Eval && !retains)
        return;
    // 0.85: the failure is in evaluation and evaluation's own outputs are a large share of what
    // is live; 0.5: in evaluation with nothing retained (an oversized evaluation batch is as
    // likely); 0.45: retained outputs measured but the failure is elsewhere.
    double confidence = e.oom.phase == Phase::Eval ? (retains ? 0.85 : 0.5) : 0.45;
    Diagnosis d = makeDiagnosis("eval_accumulation", confidence, {});
    e.evidence(d, "the OOM is in evaluation (" + e.where() + ")", e.oom.eventIndex);
    int batches = 0;
    if (e.profile.evalRetainedCount > 0) {
        std::unordered_map<uint32_t, int> perSite;
        for (const auto& allocation : e.device.allocations) {
            if (allocation.phase == Phase::Eval && allocation.category != Category::Parameters
                && allocation.allocEvent >= 0 && allocation.liveAfter(e.oom.eventIndex))
                batches = std::max(batches, ++perSite[allocation.stack.value]);
        }
        e.evidence(d,
            std::to_string(e.profile.evalRetainedCount)
                + " allocations made during evaluation are still live at the failure: "
                + formatBytes(e.profile.evalRetainedBytes) + ", " + percentText(e.profile.evalRetainedBytes, live)
                + " of live memory",
            e.profile.firstEvalRetainedEvent);
    }
    d.outlook = RunOutlook {};
    d.outlook->leadingFixStopsGrowth = true;
    if (retains && batches >= 2) {
        d.outlook->growthPerUnitBytes = e.profile.evalRetainedBytes / static_cast<uint64_t>(batches);
        d.outlook->unit = "evaluation batch";
        e.evidence(d,
            "one allocation site kept " + std::to_string(batches) + " tensors, one per batch: about "
                + formatBytes(d.outlook->growthPerUnitBytes)
                + " more per evaluation batch, until the evaluation set ends");
    }
    d.summary = retains ? "Evaluation keeps each batch's outputs on the GPU; "
            + formatBytes(e.profile.evalRetainedBytes) + " piled up before the failure."
                        : "The failure is in evaluation; outputs kept per batch or an oversized evaluation batch "
                          "are the usual causes.";
    FixContext fixes = e.fixes;
    if (retains)
        fixes.caseSavingBytes = e.profile.evalRetainedBytes;
    appendFixes(d.fixes, { FixKind::EvalAccumulation, FixKind::EvalBatchSize }, fixes);
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
