#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/analysis/stackfeatures.h"

namespace oomlens {

// Labels every trace event with a phase and a training step and fills phaseSpans and
// stepCount. Needs eventAllocation (reconstructTimeline) to recognise free events whose
// frames are only the allocation's own context (context='alloc' falls back to it).
//
// Evidence, strongest first: the event's own frames (StackFeatures), optimizer annotations
// (external_annotations "Optimizer.step#...", unless forward or backward frames show inside
// the window: a closure-based step), then continuity: an event without frames continues
// the phase before it, except that an allocation (or the OOM) without frames right after a
// forward starts the backward (the autograd thread records none under stacks='python', and
// Tensor.backward may show nowhere), and loose training-loop code continues a forward (the
// loss) or else is data preparation.
// Then physics over names: a forward pass that no backward follows and that kept less than half of
// what it made alive to its end saved nothing for a backward — an evaluation pass, even under a
// `with torch.no_grad():` that leaves no frame.
// Steps: ProfilerStep#N annotations when present, else a new step starts when forward or
// data follows the optimizer (or backward, when the trace has no optimizer), else — for
// forward-only traces — when the model's top-level forward starts over.
void labelPhases(const Snapshot& snapshot, StackFeatures& features, DeviceAnalysis& out);

} // namespace oomlens
