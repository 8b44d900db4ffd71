#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

namespace oomlens {

// An inference run's diagnosis (issue: serving and inference OOMs). Reads the run once into
// `result.serving`; adds the engine's own cause (kv_cache_budget, engine_batch, graph_capture,
// other_process, capacity, large_allocation) from the engine's message, its frames or the
// start-up stage it failed in; drops the causes only training has; and gives every diagnosis the
// inference ladder in the engine's syntax instead of the training one. Nothing changes when the
// inputs show no inference run, or show training (a snapshot's gradients or optimizer state).
// `measured`: a snapshot's diagnoses are among result.diagnoses, and they decide where the
// engine's frames only place the failure.
void diagnoseServing(const Case& input, CaseAnalysis& result, bool measured);

} // namespace oomlens
