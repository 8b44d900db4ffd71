#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

// XLA allocates all of a program's temporaries as one buffer: a request that is exactly that
// buffer is the whole step's intermediates, not one large tensor.
bool requestIsXlaTempArena(const OomFacts& f)
{
    if (!f.xlaBuffers || !f.xlaBuffers->tempBytes || !f.request)
        return false;
    const uint64_t temp = *f.xlaBuffers->tempBytes;
    const uint64_t request = *f.request;
    const uint64_t gap = temp > request ? temp - request : request - temp;
    return gap <= std::max<uint64_t>(temp / 50, 16 * MiB);
}

// A request with no card size beside it (XLA, a cut message): only its size against every card made
// can speak. Larger than the largest accelerator is certain (0.9); larger than the common 192 GB
// class almost so (0.8); a quarter of the largest card is a large share of any card (0.5).
// (XLA's temporaries arena is judged by diagnoseXlaProgram instead.)
void diagnoseRequestWithoutCard(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    const uint64_t request = *f.request;
    if (request < 8 * GiB)
        return;
    // 8 GiB in one tensor is a quarter of the common 24-32 GB cards and a tenth of the largest: large
    // on most cards, though not all (0.35).
    double confidence = 0.35;
    std::string compared = "a quarter of the common 24-32 GB cards";
    if (request >= largestCardBytes / 4) {
        confidence = 0.5;
        compared = "a quarter of the largest accelerators' 288 GB";
    }
    if (request > largestCardBytes) {
        confidence = 0.9;
        compared = "the 288 GB of the largest single accelerator made (B300, MI355X)";
    } else if (request > commonLargeCardBytes) {
        confidence = 0.8;
        compared = "the 192 GiB of the largest common cards (B200, MI300X)";
    }
    Diagnosis d = makeDiagnosis(DiagnosisId::LargeAllocation, confidence, {});
    addEvidence(d,
        "the message gives no card size, but the single " + formatBytes(request) + " request is more than " + compared);
    d.summary = "One request of " + formatBytes(request)
        + " is too large for a single GPU: typically a whole batch, sequence or score matrix processed at once.";
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
    if (f.phase == Phase::Eval)
        appendFixes(d.fixes, { FixKind::EvalBatchSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    out.add(std::move(d));
}

void diagnoseLargeAllocation(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.request)
        return;
    if (requestIsXlaTempArena(f))
        return; // the compiled step's temporaries, judged by diagnoseXlaProgram
    if (!f.limit || *f.limit == 0) {
        diagnoseRequestWithoutCard(f, fixes, out);
        return;
    }
    const uint64_t request = *f.request;
    const double share = safeRatio(request, *f.limit);
    if (share < 0.25)
        return;
    // How likely this one request, not the memory around it, is the problem: 0.35 at a quarter of the
    // card, 0.85 at three quarters; 0.9 when it is larger than everything the process may use.
    Diagnosis d = makeDiagnosis(DiagnosisId::LargeAllocation, 0.35 + 0.5 * clamp01((share - 0.25) / 0.5), {});
    if (request > *f.limit) {
        d.confidence = 0.9;
        addEvidence(d,
            "the single " + formatBytes(request) + " request is larger than the whole " + formatBytes(*f.limit)
                + (f.allowed ? " allowed to this process" : " card"));
        d.summary
            = "One tensor of " + formatBytes(request) + " cannot fit on a " + formatBytes(*f.limit) + " card at all.";
        out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    } else {
        addEvidence(d,
            "one request of " + formatBytes(request) + " is " + percentText(request, *f.limit) + " of the "
                + formatBytes(*f.limit) + (f.allowed ? " this process may use" : " card"));
        d.summary = "A single tensor of " + formatBytes(request) + " takes " + percentText(request, *f.limit)
            + " of the card: typically an attention score matrix or a whole batch processed at once.";
    }
    if (f.phase == Phase::Eval)
        appendFixes(d.fixes, { FixKind::EvalBatchSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    out.add(std::move(d));
}

} // namespace oomlens::textrules
