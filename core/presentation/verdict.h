#pragma once

#include "core/caseanalysis.h"
#include "core/diagnosis.h"

#include <vector>

namespace oomlens {

// The answer at a glance, derived once for the terminal's brief output and the top of the HTML
// report: the most likely diagnosis, the evidence that decided it and the first rung of its ladder
// that makes the run fit.
struct Verdict
{
    const Diagnosis* diagnosis = nullptr; // null: nothing in the inputs shows a failure
    // Up to three lines, those that carry a measured figure first, each group in the rule's order
    // (the rules write the decisive line first).
    std::vector<const Evidence*> evidence;
    const Fix* fix = nullptr; // the first rung projected to fit, else the ladder's first rung
    int fixRung = 0; // its 1-based place in the ladder, as `--full` and the JSON list it
    std::vector<const Diagnosis*> alternatives; // the other diagnoses, most likely first

    bool empty() const { return diagnosis == nullptr; }
};

// At most this many evidence lines: what a reader weighs at a glance.
inline constexpr size_t verdictEvidenceLines = 3;

Verdict verdictOf(const CaseAnalysis& analysis);

} // namespace oomlens
