#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/stepprofile.h"

#include <cstdint>
#include <optional>
#include <string>

namespace oomlens {

// A leak seen in the tensors it keeps rather than in a live curve, for traces too short to compare
// several step starts (a ring buffer that kept a step or two). A loop that keeps a reference per
// step (outputs appended to a list, a feature bank never trimmed) leaves one set of same-sized
// tensors from the same line of code per step, never freed. The live set shows it as many blocks
// of one size from one call stack, besides weights, gradients and optimizer state:
//   - some made before the failing step began (older than the trace when the trace holds that
//     step's start, or made in an earlier step of the trace): they outlived a step;
//   - more of them made in the trace, one set per step: the site is still adding;
//   - none of that site's survivors freed: a cache evicts, a leak does not.
struct KeptPerStep
{
    StackId stack = FrameTable::emptyStack();
    std::string where; // the user's frame of that stack
    uint64_t tensorBytes = 0; // the size of each kept tensor
    int live = 0; // how many are live at the failure
    int olderThanStep = 0; // of those, made before the failing step began
    int perStep = 0; // how many one step adds (the median over the trace's steps that added any)
    // The trace holds no whole step before the failing one, so it cannot show the site adding:
    // every kept tensor is older than it. perStep is then 1 (what one reference kept per step
    // adds), not a measurement.
    bool rateUnseen = false;
    int64_t latestEvent = -1; // the newest one's allocation
    uint64_t liveBytes() const { return tensorBytes * static_cast<uint64_t>(live); }
    uint64_t perStepBytes() const { return tensorBytes * static_cast<uint64_t>(perStep); }
};

// The largest such group live at untilEvent, if any holds at least three tensors.
//
// A ring buffer that kept less than a step before the failure cannot show any step adding (the
// reference is taken once per step, at a point the trace may not reach). There the kept set is
// read from the live tensors alone, and only where nothing else explains them: at least three of
// one size from one line of the training loop itself (no module, optimizer, loading, evaluation
// or framework frame decides their phase: not a layer's activations of the failing step, not
// state; and the innermost Python frame is the program's file, not an installed package's), none
// of them made or freed in the trace, and together more than the failing request
// lacked (without them the request fits: they are what filled the card). `shortfallBytes` is what
// the request lacked; nullopt where the failure is not in a training step (inference, evaluation),
// which keeps no per-step reference to read this way.
std::optional<KeptPerStep> findKeptPerStep(const Snapshot& snapshot, const DeviceAnalysis& device,
    const DeviceProfile& profile, int64_t untilEvent, std::optional<uint64_t> shortfallBytes);

} // namespace oomlens
