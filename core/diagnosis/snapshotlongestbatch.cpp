#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

void longestBatch(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (e.oom.step < 0 || e.oom.phase == Phase::Eval)
        return;
    std::vector<uint64_t> growth;
    std::vector<uint64_t> largest;
    for (const auto& step : e.profile.steps) {
        if (step.step != e.oom.step && step.complete && step.step >= e.firstTrainingStep() && !step.hasEval) {
            growth.push_back(step.dynamicGrowth());
            largest.push_back(step.largestDynamicAlloc);
        }
    }
    if (growth.size() < 2)
        return;
    const StepProfile* failing = e.profile.step(e.oom.step);
    if (!failing)
        return;
    const uint64_t typical = median(growth);
    uint64_t dynamicNow = 0;
    for (int i = 0; i < categoryCount; ++i) {
        if (isDynamic(static_cast<Category>(i)))
            dynamicNow += e.oom.liveByCategory[static_cast<size_t>(i)];
    }
    const uint64_t start = failing->startDynamic();
    const uint64_t needed = (dynamicNow > start ? dynamicNow - start : 0) + e.oom.requestedBytes;
    const double factor = safeRatio(needed, typical);
    if (typical == 0 || factor < 1.5)
        return;
    const uint64_t typicalLargest = median(largest);
    const uint64_t failingLargest = std::max(failing->largestDynamicAlloc, e.oom.requestedBytes);
    const double largestFactor = safeRatio(failingLargest, typicalLargest);
    Diagnosis d = makeDiagnosis("longest_batch", 0.55 + 0.3 * clamp01((factor - 1.5) / 2.0), {});
    e.evidence(d,
        "step " + std::to_string(e.oom.step) + " needed at least " + formatBytes(needed)
            + " of activations and temporaries, " + times(factor) + " the " + formatBytes(typical)
            + " a typical step (median of " + std::to_string(growth.size()) + ") peaked at",
        e.oom.eventIndex);
    if (typicalLargest > 0 && largestFactor >= 2.0) {
        e.evidence(d,
            "its largest buffer is " + formatBytes(failingLargest) + " against " + formatBytes(typicalLargest)
                + " in other steps (" + times(largestFactor) + ")"
                + (largestFactor >= 1.5 * factor ? ": faster than the batch grew, like seq² attention scores" : ""),
            failing->largestDynamicEvent >= 0 ? failing->largestDynamicEvent : e.oom.eventIndex);
    }
    const uint64_t excess = needed > typical ? needed - typical : 0;
    d.summary = "Other steps peak far lower; step " + std::to_string(e.oom.step) + "'s batch is about " + times(factor)
        + " as demanding, as the longest sequences in a variable-length dataset are.";
    FixContext fixes = e.fixes;
    fixes.caseSavingBytes = excess;
    appendFixes(d.fixes, { FixKind::LengthBucketing }, fixes);
    if (largestFactor >= 1.5 * factor)
        appendFixes(d.fixes, { FixKind::Sdpa }, e.fixes);
    appendFixes(d.fixes,
        { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments, FixKind::Sdpa,
            FixKind::ShorterSequences },
        e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
