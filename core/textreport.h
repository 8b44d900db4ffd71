#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <string>

namespace oomlens {

// The human-readable form of `oomlens diagnose` (without --json): inputs, each OOM message,
// each snapshot's peak, then the diagnoses with evidence and fixes in ladder order.
std::string caseToText(const Case& input, const CaseAnalysis& analysis);

} // namespace oomlens
