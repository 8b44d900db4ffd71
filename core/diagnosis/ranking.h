#pragma once

#include "core/diagnosis.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// The facts of one failure every candidate is judged against.
struct RunFacts
{
    std::optional<uint64_t> usableBytes; // what the process could hold: its reserve + free on the card
    uint64_t fixedStateBytes = 0; // weights + gradients + optimizer state training keeps (projected)
    std::string fixedStateText; // how fixedStateBytes was made up, for the reason line
    std::string phase; // the failing phase, "evaluation", "training"
    // What the failing phase still has to allocate to reach its end (the rest of a typical step's
    // peak, state the first steps still create, at least the failed request), and how it was made up.
    std::optional<uint64_t> phaseStillNeedsBytes;
    std::string phaseNeedText;
    // A detected cause that makes the failing phase need more than the steps before it did (a
    // longer batch, state created lazily, the first backward): no amount recovered once bounds it.
    std::optional<DiagnosisId> phaseGrowthCause;
    // A completed earlier step shows what the failing one needs (phaseStillNeedsBytes is then the
    // rest of a typical step); false in a run's first step, where nothing came before to compare.
    bool earlierStepsShowNeed = false;
};

// The explicit ranking step. A diagnosis names the cause when its first fix makes the run fit to
// the end of the failing phase, not merely the one request that failed. Measured facts decide
// that a fix cannot:
//   - the state training keeps exceeds what the process could hold, and the fix frees only
//     memory that comes back every step (activations, temporaries, cache);
//   - another candidate's cause adds bytes every step or batch, and the fix frees a fixed amount
//     once instead of stopping that growth: it buys a few more batches, the phase goes on.
//   - the first fix makes a fixed amount usable once (split cache blocks recovered) and that is
//     less than what the failing phase still has to allocate, or another detected cause makes the
//     phase need more than the steps before it: the request would have fit, the phase would not.
// Each candidate's outlook gets leadingFixFitsRun and the reason in numbers; a candidate whose
// first fix cannot make the run fit gets that reason as evidence.
void assessRunFit(std::vector<Diagnosis>& candidates, const RunFacts& facts);

// Marks a "ranked below <id>" evidence line whose diagnosis is a symptom or a consequence of that
// cause (the split cache pending frees left behind, a first backward whose failing request was a
// collective's bucket): "ranked below pending_frees, which explains it: ...". The relation holds
// whatever later sources add, so rankDiagnoses keeps such a diagnosis below its cause.
inline constexpr std::string_view explainsItMark = ", which explains it: ";
// That evidence line: "ranked below <cause>, which explains it: <why>".
std::string explainedByLine(DiagnosisId cause, std::string_view why);

// Most likely cause first: candidates whose first fix cannot make the run fit go after those
// that can or where that is unknown; then by confidence, then catalogue order (sortDiagnoses).
// A diagnosis explained by another one present (explainsItMark) stays below it, even where the
// text confirmed the symptom after the snapshot's rules had ranked it.
void rankDiagnoses(std::vector<Diagnosis>& diagnoses);

} // namespace oomlens
