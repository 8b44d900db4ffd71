#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

namespace oomlens::snapshotrules {

void firstBackward(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (e.oom.phase != Phase::Backward)
        return;
    const bool first = e.oom.step < 0 || e.oom.step <= e.firstTrainingStep();
    const uint64_t state = band(e.oom.liveByCategory, Category::OptimizerState);
    Diagnosis d = makeDiagnosis("first_backward", first && state == 0 ? 0.85 : (first ? 0.7 : 0.45), {});
    e.evidence(
        d, "the OOM is in " + e.where() + (state == 0 ? ", before any optimizer state exists" : ""), e.oom.eventIndex);
    e.evidence(d, "live at the failure: " + e.bandsText());
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
    d.summary = "The forward pass fit; backward then needs the saved activations and the new gradients at once, "
                "and that did not fit.";
    appendFixes(
        d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
