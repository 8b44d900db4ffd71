#pragma once

#include "core/analysis/snapshotanalysis.h"

namespace oomlens {

// Fills DeviceAnalysis::phaseRuns and stepStarts from its phaseSpans (labelPhases): the spans
// already cut the trace at every change of phase or step, so this reads a few spans per step,
// not every event.
void buildPhaseRuns(DeviceAnalysis& device);

} // namespace oomlens
