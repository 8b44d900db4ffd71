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
    Diagnosis d = makeDiagnosis("capacity", confidence, {});
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
    if (f.backend == "mps")
        appendFixes(d.fixes, { FixKind::MpsWatermark }, fixes);
    out.add(std::move(d));
}

// The log printed how many parameters train. Full training keeps every trainable weight and its
// gradient, at least 2 bytes each in 16 bits (4 B/param); AdamW adds two fp32 moments (8 B/param).
// When 4 B/param exceed what the process may hold, the run can never train here (0.9); when AdamW's
// 12 B/param do, it cannot train with AdamW (0.75). Activation fixes cannot help either way.
void diagnoseProjectedState(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.trainableParameters || !f.limit || *f.limit == 0)
        return;
    const uint64_t parameters = *f.trainableParameters;
    if (parameters > (uint64_t(1) << 50) / 16)
        return;
    const uint64_t floor = 4 * parameters;
    const uint64_t adam = 12 * parameters;
    if (adam <= *f.limit)
        return;
    const bool never = floor > *f.limit;
    Diagnosis d = makeDiagnosis("capacity", never ? 0.9 : 0.75, {});
    addEvidence(d,
        "the log reports " + std::to_string(parameters) + " trainable parameters: their 16-bit weights and gradients "
            + "alone need " + formatBytes(floor) + " (4 bytes each), and with AdamW's two fp32 moments "
            + formatBytes(adam) + " (12 bytes each), against the " + formatBytes(*f.limit)
            + (f.allowed ? " this process may use" : " card"));
    if (f.phase == Phase::Backward || f.phase == Phase::Forward)
        addEvidence(d,
            "it failed before the optimizer state exists, but the first optimizer step would need it: activation "
            "fixes cannot make this run fit");
    d.summary = never ? "Training " + formatBytes(floor) + " of weights and gradients cannot fit on a "
            + formatBytes(*f.limit) + " card at all: shard them or train adapters."
                      : "Weights, gradients and AdamW's state (" + formatBytes(adam) + ") exceed the "
            + formatBytes(*f.limit) + " card: shrink the optimizer state or shard it.";
    if (!never)
        appendFixes(d.fixes, { FixKind::Optimizer8bit }, fixes);
    appendFixes(d.fixes, { FixKind::Zero, FixKind::Offload, FixKind::Lora, FixKind::Optimizer8bit }, fixes);
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    out.add(std::move(d));
}

} // namespace oomlens::textrules
