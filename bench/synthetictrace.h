#pragma once

#include "core/snapshot.h"

#include <cstddef>
#include <memory>

namespace oomlens::bench {

enum class StepShape {
    // Every step runs 960 layers with 3 MiB activations: a regular trace for timing the analysis.
    Uniform,
    // The forward length (600–999 layers) and activation sizes (2–4 MiB) vary per step, so a
    // plotted curve has structure at every zoom.
    Varying,
};

// A training trace built in memory, at least `targetEvents` long: forward layers allocate
// activations and temporaries, backward frees them, gradients and Adam state appear in the first
// step and optimizer scratch in every step.
std::shared_ptr<const Snapshot> syntheticTrainingTrace(size_t targetEvents, StepShape shape);

} // namespace oomlens::bench
