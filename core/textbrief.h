#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <string>

namespace oomlens {

// The terminal's default answer to `oomlens diagnose`: what was read, what failed, the verdict
// with its strongest evidence, the first fix that makes the run fit with its projection and code,
// the other causes on one line, and how to see everything (`--full`, which prints caseToText).
std::string caseToBriefText(const Case& input, const CaseAnalysis& analysis);

} // namespace oomlens
