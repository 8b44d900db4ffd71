#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/stepprofile.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Live memory compared at the same point of successive steps (seed 002, M20: a leak is rising
// memory_allocated() across steps, not rising reserved memory). In a healthy loop the live set at
// the start of a step is the state training keeps, the same every step whatever the batch; what
// a step leaves behind shows up there one step later.
struct LeakFinding
{
    std::string point; // "the start of each step", "the start of each forward pass"
    // live bytes at each matching point besides weights, gradients and optimizer state, oldest first
    std::vector<uint64_t> live;
    std::vector<int64_t> events; // the matching points' events
    int rising = 0; // comparisons where the next point is higher
    int comparisons = 0;
    uint64_t slopePerStep = 0; // the median step-over-step change
    uint64_t growth = 0; // last − first
    struct Site
    {
        std::string where; // the user frame's label (core/analysis/userframe.h): "forward (model.py:12)"
        uint64_t bytes = 0;
        int count = 0;
    };
    std::vector<Site> growingSites; // allocated between the first and last point and still live, largest first
};

// Matching points are the starts of training steps after the first (which creates gradients and
// optimizer state); when fewer than three such steps are known (steps not detected, a ring buffer
// that kept little), the starts of forward passes. Robust to a truncated trace and to one step out
// of line: the slope is the median change, and a leak needs most comparisons to rise, not all.
// Not a leak: state being created (gradients, optimizer state: left out of the comparison), and
// growth confined to the first points (the later half of the points must keep the slope).
std::optional<LeakFinding> findLeak(const Snapshot& snapshot, const DeviceAnalysis& device,
    const DeviceProfile& profile, int64_t untilEvent, int32_t firstTrainingStep);

} // namespace oomlens
