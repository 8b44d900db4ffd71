#pragma once

#include "core/analysis/annotationspans.h"
#include "core/analysis/snapshotanalysis.h"

#include <vector>

namespace oomlens {

// Where backward re-ran checkpointed forward code (activation checkpointing's recompute), as
// spans the timeline draws beside the record_function annotations: each run of allocations made
// under checkpointing's recompute frames, extended over the frees in between, until an allocation
// from anywhere else. Not a phase: the events stay backward's.
inline constexpr const char* recomputeSpanName = "recompute (activation checkpointing)";

std::vector<AnnotationSpan> recomputeSpans(const Snapshot& snapshot, const DeviceAnalysis& device);

// The annotation spans with the recompute spans merged in, in start order; a recompute span's
// depth is one more than the annotation spans open around it.
std::vector<AnnotationSpan> annotationAndRecomputeSpans(const Snapshot& snapshot, const DeviceAnalysis& device);

} // namespace oomlens
