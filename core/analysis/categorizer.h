#pragma once

#include "core/analysis/categoryrules.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/analysis/stackfeatures.h"

namespace oomlens {

// Bands every allocation as parameters, gradients, optimizer state, activations, temporaries,
// inputs or unknown, and records why. Needs the phases (labelPhases). User rules, when given,
// win over the built-in evidence; the built-in rules combine the allocating stack's phase with
// the lifetime: which phase freed it, and whether it outlived the phase run it was born in.
void categorize(const Snapshot& snapshot, StackFeatures& features, CategoryRules* rules, DeviceAnalysis& out);

} // namespace oomlens
