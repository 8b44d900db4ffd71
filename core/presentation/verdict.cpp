#include "core/presentation/verdict.h"

#include <algorithm>
#include <cctype>

namespace oomlens {

namespace {

bool carriesFigure(const Evidence& evidence)
{
    return std::any_of(evidence.text.begin(), evidence.text.end(),
        [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

std::vector<const Evidence*> strongestEvidence(const Diagnosis& diagnosis)
{
    std::vector<const Evidence*> chosen;
    for (const bool withFigure : { true, false }) {
        for (const Evidence& evidence : diagnosis.evidence) {
            if (chosen.size() < verdictEvidenceLines && carriesFigure(evidence) == withFigure)
                chosen.push_back(&evidence);
        }
    }
    // Back in the rule's order: the figure-first pick only decides which lines make the cut.
    std::sort(chosen.begin(), chosen.end());
    return chosen;
}

} // namespace

Verdict verdictOf(const CaseAnalysis& analysis)
{
    Verdict verdict;
    if (analysis.diagnoses.empty())
        return verdict;
    const Diagnosis& top = analysis.diagnoses.front();
    verdict.diagnosis = &top;
    verdict.evidence = strongestEvidence(top);
    const auto fits = std::find_if(
        top.fixes.begin(), top.fixes.end(), [](const Fix& fix) { return fix.fitsAfter.value_or(false); });
    const auto chosen = fits != top.fixes.end() ? fits : top.fixes.begin();
    if (chosen != top.fixes.end()) {
        verdict.fix = &*chosen;
        verdict.fixRung = static_cast<int>(chosen - top.fixes.begin()) + 1;
    }
    for (size_t i = 1; i < analysis.diagnoses.size(); ++i)
        verdict.alternatives.push_back(&analysis.diagnoses[i]);
    return verdict;
}

} // namespace oomlens
