#pragma once

#include "core/compare/comparison.h"

#include <cstddef>

namespace oomlens {

// The two sides on a time-normalised axis (0..1: each side's first to last compared event, by the
// time the timelines draw, DeviceAnalysis::timeAxis, or by event index where the trace has no
// times) even when core aligned them by step: the Compare view's axis toggle. Reads only the
// per-event levels and the time axis core's analysis already holds.
ComparisonTimeline timeNormalisedOverlay(
    const Comparison& comparison, const DeviceAnalysis& a, const DeviceAnalysis& b, size_t columns = 400);

} // namespace oomlens
