#pragma once

#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// `diagnose --json`'s "allocation_annotations": one entry per snapshot, an array of the notes
// torch.cuda.memory._annotate_tensor attached to allocations (core/analysis/allocationannotations.h)
// on every device, in trace order, each with the allocation it names (null when the trace does not
// hold it) and whether that allocation was live at the device's peak, at its first OOM, at the dump.
nlohmann::ordered_json allocationAnnotationsToJson(const CaseAnalysis& analysis);

} // namespace oomlens
