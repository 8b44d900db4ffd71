#pragma once

#include "core/analysis/enginemarkers.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/phase.h"

#include <cstdint>
#include <optional>

namespace oomlens {

// The categorizer's rules for inference engines and RL iterations (issue 24), apart from
// training's own (categorizer.cpp) and the communication rules. Reasons are string literals: the
// categorizer interns them by address.
struct CategoryVerdict
{
    Category category;
    const char* reason;
};

// What the allocating stack alone says, before any phase or lifetime reasoning: a KV cache
// (whatever phase allocated it, in the default pool or an engine's own), or an inference engine's
// copy of the weights made while it started (kept beyond that start), or the buffers of the CUDA
// graphs it captured while starting (`inGraphCapture`: the stack is inside a capture). nullopt:
// nothing engine-specific.
std::optional<CategoryVerdict> engineVerdict(
    uint32_t features, Engine engine, Phase born, bool keptBeyondRun, bool inGraphCapture);

// Allocations born in one of an RL iteration's stages (isIterationPhase): scratch freed within the
// stage, the batch the update will read (rollout, reference and reward outputs), the weight sync's
// buffers, what a reload brings back.
CategoryVerdict iterationVerdict(Phase born, uint32_t features, bool sameRun, bool caughtByFailure);

// Bytes of parameters live right after `event` that an inference engine's stacks made: its copy of
// the weights, which trains no gradients and keeps no optimizer state (the trainer's state excludes it).
uint64_t engineWeightsLiveAfter(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event);

} // namespace oomlens
