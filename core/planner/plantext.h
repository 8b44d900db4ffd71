#pragma once

#include "core/planner/planresult.h"

#include <string>

namespace oomlens::planner {

// The readable `oomlens plan` answer: the set-up, a table of bands per GPU (with measured and
// ratio columns when calibrated), the peak phase, host memory, the verdict against the card,
// the ladder that makes it fit, the common cards, and the notes.
std::string planToText(const PlanResult& result);

// "fits with 2.10 GiB to spare" / "short by 3.40 GiB": the words the CLI and the What-if view share.
std::string fitWords(uint64_t totalBytes, uint64_t capacityBytes);

} // namespace oomlens::planner
