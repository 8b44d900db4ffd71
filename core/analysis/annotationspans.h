#pragma once

// Named spans from a snapshot's `external_annotations`: record_function ranges (ProfilerStep#3,
// Optimizer.step#AdamW.step, the user's own `torch.profiler.record_function("eval")`) recorded as
// START/END pairs while memory history was on, and marks without a stage (the capture helper's
// step annotations, `user_metadata` events). The timeline draws them, its hover names the spans
// under the cursor, the report's timeline shows them, and phase detection reads them. Derived
// once per device, with the recompute spans, into DeviceAnalysis::annotationSpans
// (snapshotanalysis.h includes this header for the struct, hence only a declaration of
// DeviceAnalysis here).

#include "core/snapshot.h"

#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

struct DeviceAnalysis;

struct AnnotationSpan
{
    std::string name;
    int64_t startUs = 0;
    int64_t endUs = 0; // == startUs for a mark; the trace's last time for a span never closed
    int64_t firstEvent = 0; // the first trace event at or after the start
    int64_t lastEvent = 0; // the last trace event before the end (>= firstEvent - 1: may hold no event)
    int depth = 0; // nesting among the spans open at its start: 0 outermost
    bool closed = true; // false: START without its END (the dump came first, or the ring buffer cut it)
    bool mark = false; // no stage: a point in time, not a range
};

// The value of one field of an annotation ("name", "stage"); empty when absent.
std::string_view annotationField(const Annotation& annotation, std::string_view key);
// Annotations recorded without a device (-1) belong to every device.
bool annotationOnDevice(const Annotation& annotation, int32_t device);

// The spans and marks on `device`, in start order; event ranges refer to that device's trace.
// A START is closed by the next END of the same name (innermost first, as record_function
// nests); an END with no START is dropped (the ring buffer cut its START).
std::vector<AnnotationSpan> annotationSpans(const Snapshot& snapshot, const DeviceAnalysis& device);

// The spans that hold `event`, outermost first ("ProfilerStep#3 › Optimizer.step#AdamW.step").
std::vector<const AnnotationSpan*> spansAt(const std::vector<AnnotationSpan>& spans, int64_t event);

// Readable name of a record_function span: "Optimizer.step#AdamW.step" → "AdamW.step".
std::string_view annotationLabel(std::string_view name);

} // namespace oomlens
