#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

void diagnoseCapacity(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.limit || !f.request || !f.allocated || *f.limit == 0 || f.inconsistent)
        return;
    const uint64_t limit = *f.limit;
    const uint64_t request = *f.request;
    const uint64_t allocated = *f.allocated;
    const uint64_t room = f.free.value_or(0) + f.reservedUnallocated.value_or(0);
    // It would have fit with real headroom, a tenth of the card: capacity is not the story. Less
    // than that is the slack a full card always has (rounding, split blocks, the last batch).
    if (f.free && room >= request && safeRatio(room, limit) >= 0.1)
        return;
    // How likely the live tensors simply need more than the card: 0.25 with 40% of it live, 0.7 when
    // it is nine tenths full; discounted by a rule that explains the failure fully, and by a phase
    // case that names what filled it. A message cannot tell the bands apart, so never above 0.7.
    const double filled = safeRatio(allocated, limit);
    double confidence = 0.25 + 0.45 * clamp01((filled - 0.4) / 0.5);
    confidence *= (1.0 - 0.5 * out.strongestFullExplanation) * out.capacityDamping;
    Diagnosis d = makeDiagnosis(DiagnosisId::Capacity, confidence, {});
    d.title = "Live tensors fill the card";
    addEvidence(d,
        "live tensors take " + formatBytes(allocated) + " of the " + formatBytes(limit)
            + (f.allowed ? " allowed" : " card") + " (" + percentText(allocated, limit) + ")");
    if (f.free)
        addEvidence(d,
            "the " + formatBytes(request) + " request is more than the " + formatBytes(*f.free) + " free plus "
                + formatBytes(f.reservedUnallocated.value_or(0)) + " cached but unused");
    addEvidence(d,
        "a message cannot tell parameters, gradients, optimizer state and activations apart: a snapshot would show "
        "which band to cut");
    d.summary = "Live tensors take " + percentText(allocated, limit) + " of the card and the next "
        + formatBytes(request) + " does not fit: the run needs less memory, not a tidier cache.";
    if (f.phase == Phase::Load)
        appendFixes(d.fixes, { FixKind::LoadToCpu }, fixes);
    appendLadder(d.fixes, fixes);
    if (f.backend == Backend::Mps)
        appendFixes(d.fixes, { FixKind::MpsWatermark }, fixes);
    out.add(std::move(d));
}

} // namespace oomlens::textrules
