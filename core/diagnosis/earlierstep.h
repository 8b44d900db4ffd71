#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>

namespace oomlens {

// Whether the run completed a training step before its trace began, read from what only a
// completed step leaves: optimizer state that step() creates lazily on its first call (_init_group:
// Adam's moments, SGD's momentum), live at `untilEvent` and older than the trace. optimizer.step()
// runs after a backward, so a whole step ran before the ring buffer's window, and the trace's step
// numbers (which count the steps it shows) do not start at the run's first. State built in a
// constructor (DeepSpeed's ZeRO optimizer runs one step on zero gradients while it initialises)
// proves nothing and is left out. Returns that state's bytes, 0 when none.
uint64_t optimizerStateOfAnEarlierStep(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t untilEvent);

} // namespace oomlens
