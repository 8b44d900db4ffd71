#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

// IPEX refuses any single block above 4 GB on some Intel GPUs: a limit of the platform, not full
// memory. The message states it in words, so the diagnosis is certain (0.95) and nothing else is
// considered: the card was not exhausted.
Diagnosis diagnosePlatformLimit(const OomFacts& f, const FixContext& fixes)
{
    const uint64_t limit = *f.platformLimit;
    Diagnosis d = makeDiagnosis(DiagnosisId::LargeAllocation, 0.95, {});
    d.title = "One request is larger than the platform allows in one block";
    addEvidence(d,
        "the platform refuses any single allocation above " + formatBytes(limit) + " (\"Current platform can NOT "
            + "allocate memory block with size larger than 4GB\"), and this request was " + formatBytes(*f.request));
    if (f.total && f.allocated)
        addEvidence(d,
            "the card was not full: " + formatBytes(*f.allocated) + " allocated of " + formatBytes(*f.total)
                + "; a platform limit, not exhausted memory, refused it");
    d.summary = "Intel's XPU runtime on this GPU cannot allocate one block larger than " + formatBytes(limit) + "; the "
        + formatBytes(*f.request) + " tensor has to be split, whatever memory is free.";
    d.fixes.push_back(Fix { FixKind::SplitTensor, "Split the tensor into pieces below the per-block limit",
        "Process the batch, the sequence or the attention heads in chunks so that no single tensor passes "
            + formatBytes(limit) + ". Memory that is free does not help: the limit is per allocation.",
        "# chunk the work so each piece stays under the limit\n"
        "outs = [model(chunk) for chunk in batch.split(batch.shape[0] // 4)]\n"
        "out = torch.cat(outs)",
        std::nullopt, std::nullopt, false });
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    return d;
}

// XLA prints the compiled program's own accounting after RESOURCE_EXHAUSTED. When its temporaries
// (activations and intermediates of the step) are most of it, activation fixes are the way: 0.6, as
// the compiler measured it but the card's size may be unknown; 0.85 when that total is known to
// exceed what the allocator may use. When parameters dominate, the model state itself is the load.
void diagnoseXlaProgram(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.xlaBuffers || !f.xlaBuffers->totalBytes || *f.xlaBuffers->totalBytes == 0)
        return;
    const XlaBufferStats& stats = *f.xlaBuffers;
    const uint64_t total = *stats.totalBytes;
    const uint64_t temp = stats.tempBytes.value_or(0);
    const uint64_t parameters = stats.parameterBytes.value_or(0);
    const bool tempDominates = temp * 2 >= total;
    // Temporaries asked for as one arena are one large request in the catalogue's terms; its fixes
    // (smaller batch, rematerialisation) are the activation ones either way.
    const bool arena = tempDominates && requestIsXlaTempArena(f);
    Diagnosis d = makeDiagnosis(arena ? DiagnosisId::LargeAllocation : DiagnosisId::Capacity, 0.6, {});
    d.title = tempDominates ? "The compiled step's temporaries do not fit" : "The program's inputs fill the card";
    addEvidence(d,
        "XLA's buffer assignment: the program needs " + formatBytes(total) + " at once: " + formatBytes(parameters)
            + " of parameters (weights, optimizer state, the batch), " + formatBytes(temp)
            + " of temporaries (activations and intermediates)"
            + (stats.liveOutBytes ? ", " + formatBytes(*stats.liveOutBytes) + " of outputs" : std::string()));
    if (requestIsXlaTempArena(f))
        addEvidence(d,
            "the failing " + formatBytes(*f.request)
                + " request is the temporaries' single arena, not one large tensor: XLA allocates them together");
    if (f.limit && total > *f.limit) {
        d.confidence = 0.85;
        addEvidence(d,
            "that is more than the " + formatBytes(*f.limit) + " the allocator may use (" + percentText(total, *f.limit)
                + ")");
    }
    if (tempDominates) {
        d.summary = "The jitted step's intermediates take " + percentText(temp, total) + " of the " + formatBytes(total)
            + " it needs: a smaller batch or rematerialisation (jax.checkpoint) cuts them.";
        appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Checkpointing, FixKind::Bf16, FixKind::Sdpa }, fixes);
    } else {
        d.summary = "The program's inputs (weights, optimizer state, batch) take " + percentText(parameters, total)
            + " of the " + formatBytes(total) + " it needs.";
        appendFixes(d.fixes, { FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::MicroBatch }, fixes);
    }
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    out.add(std::move(d));
}

} // namespace oomlens::textrules
