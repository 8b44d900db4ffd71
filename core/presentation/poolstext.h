#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <string>
#include <vector>

namespace oomlens {

// The text form of what `diagnose --json` says of one snapshot's pools ("private_pools": whose
// memory each private pool holds, an inference engine's KV cache or weights beside a trainer) and
// of its frees that waited for another stream ("pending_frees"), one statement per line. Empty
// when the snapshot has neither.
std::vector<std::string> privatePoolLines(const Case& input, const CaseAnalysis& analysis, size_t snapshotIndex);
std::vector<std::string> pendingFreeLines(const CaseAnalysis& analysis, size_t snapshotIndex);

} // namespace oomlens
