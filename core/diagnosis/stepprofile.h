#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// What each training step of one device looked like, up to a given event (the OOM): the
// numbers the step-based diagnoses compare (growth at step start for leaks, per-step peaks for
// the longest batch, when optimizer state appeared, what evaluation kept).
struct StepProfile
{
    int32_t step = -1;
    int64_t firstEvent = -1;
    int64_t lastEvent = -1;
    CategoryBytes startBands {}; // live right before the step's first event
    uint64_t peakLive = 0;
    int64_t peakEvent = -1;
    uint64_t peakDynamic = 0; // activations + temporaries + inputs + unknown at their step maximum
    uint64_t largestDynamicAlloc = 0;
    int64_t largestDynamicEvent = -1;
    bool hasBackward = false;
    bool hasOptimizer = false;
    bool hasEval = false;
    bool complete = false; // the profiled range goes past its last event

    uint64_t startDynamic() const;
    uint64_t startLive() const;
    uint64_t dynamicGrowth() const { return peakDynamic > startDynamic() ? peakDynamic - startDynamic() : 0; }
};

struct DeviceProfile
{
    std::vector<StepProfile> steps; // ascending step numbers, step < 0 left out
    int64_t firstOptimizerStateEvent = -1;
    int32_t firstOptimizerStateStep = -1;
    uint64_t evalRetainedBytes = 0; // allocated during eval, still live at the end of the range
    int evalRetainedCount = 0;
    int64_t firstEvalRetainedEvent = -1;
    CategoryBytes bandsAtEnd {};
    CategoryBytes peakBands {}; // each band's own maximum over the range (not at one moment)

    const StepProfile* step(int32_t number) const;
};

// Profiles events [0, untilEvent] (inclusive); untilEvent < 0 means the whole trace.
DeviceProfile profileDevice(const DeviceAnalysis& device, int64_t untilEvent);

bool isDynamic(Category category);
// The bytes of the bands isDynamic names (activations, temporaries, inputs, unknown): what comes and
// goes with the batch. Narrower than livequery.h's dynamicBytes, which counts all but the state.
uint64_t dynamicBandBytes(const CategoryBytes& bands);

} // namespace oomlens
