#include "core/analysis/recomputespans.h"

#include "core/analysis/distributedstacks.h"

#include <algorithm>

namespace oomlens {

std::vector<AnnotationSpan> recomputeSpans(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    std::vector<AnnotationSpan> spans;
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace || !snapshot.frames || !snapshot.strings)
        return spans;
    DistributedStacks stacks(snapshot);
    bool open = false;
    for (size_t e = 0; e < trace->events.size(); ++e) {
        const TraceEvent& event = trace->events[e];
        if (event.action != TraceAction::Alloc)
            continue;
        const bool recompute = event.stack != FrameTable::emptyStack() && stacks.recompute(event.stack);
        if (recompute && open) {
            spans.back().lastEvent = static_cast<int64_t>(e);
            spans.back().endUs = event.timeUs;
        } else if (recompute) {
            AnnotationSpan span;
            span.name = recomputeSpanName;
            span.firstEvent = span.lastEvent = static_cast<int64_t>(e);
            span.startUs = span.endUs = event.timeUs;
            spans.push_back(span);
        }
        open = recompute;
    }
    return spans;
}

std::vector<AnnotationSpan> annotationAndRecomputeSpans(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    std::vector<AnnotationSpan> spans = annotationSpans(snapshot, device);
    std::vector<AnnotationSpan> recompute = recomputeSpans(snapshot, device);
    if (recompute.empty())
        return spans;
    for (AnnotationSpan& r : recompute) {
        for (const AnnotationSpan& a : spans) {
            if (!a.mark && a.firstEvent <= r.firstEvent && r.firstEvent <= a.lastEvent)
                r.depth = std::max(r.depth, a.depth + 1);
        }
    }
    spans.insert(spans.end(), recompute.begin(), recompute.end());
    std::stable_sort(spans.begin(), spans.end(),
        [](const AnnotationSpan& x, const AnnotationSpan& y) { return x.firstEvent < y.firstEvent; });
    return spans;
}

} // namespace oomlens
