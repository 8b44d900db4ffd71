#include "core/analysis/annotationspans.h"

#include "core/analysis/series.h"

#include <algorithm>
#include <map>

namespace oomlens {

std::string_view annotationField(const Annotation& annotation, std::string_view key)
{
    for (const auto& [k, v] : annotation.fields) {
        if (k == key)
            return v;
    }
    return {};
}

bool annotationOnDevice(const Annotation& annotation, int32_t device)
{
    return annotation.device == device || annotation.device < 0;
}

std::string_view annotationLabel(std::string_view name)
{
    // record_function names its optimizer ranges "Optimizer.step#AdamW.step"; the part after the
    // '#' says it all. "ProfilerStep#3" keeps its number, which is the point of it.
    const size_t hash = name.find('#');
    if (hash == std::string_view::npos || hash + 1 >= name.size())
        return name;
    const std::string_view tail = name.substr(hash + 1);
    const bool number = std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; });
    return number ? name : tail;
}

namespace {

// Runs of events that carry the same user metadata (torch.cuda.memory._set_memory_metadata):
// the user's own labels for stretches of the run. JSON objects there are the capture helper's
// sidecar riding along, not a label.
void addMetadataSpans(const Snapshot& snapshot, const DeviceTrace& trace, std::vector<AnnotationSpan>& spans)
{
    const StringTable& strings = *snapshot.strings;
    StringId current;
    size_t start = 0;
    const auto close = [&](size_t end) {
        if (!current.isValid())
            return;
        const std::string_view text = strings.get(current);
        if (text.empty() || text.front() == '{')
            return;
        AnnotationSpan span;
        span.name = std::string(text);
        span.startUs = trace.events[start].timeUs;
        span.endUs = trace.events[end - 1].timeUs;
        span.firstEvent = static_cast<int64_t>(start);
        span.lastEvent = static_cast<int64_t>(end - 1);
        spans.push_back(std::move(span));
    };
    for (size_t e = 0; e < trace.events.size(); ++e) {
        // An `annotate` entry's user_metadata is the note it attaches to one allocation
        // (allocationannotations.h), not the thread's current label: it neither ends nor starts a run.
        if (trace.events[e].action == TraceAction::Annotate)
            continue;
        const StringId metadata = trace.events[e].userMetadata;
        if (metadata == current)
            continue;
        close(e);
        current = metadata;
        start = e;
    }
    close(trace.events.size());
}

} // namespace

std::vector<AnnotationSpan> annotationSpans(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    std::vector<AnnotationSpan> spans;
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace || trace->events.empty())
        return spans;
    const int64_t lastTime = trace->events.back().timeUs;
    const auto firstEventAt = [&](int64_t timeUs) { return eventAtTime(device, *trace, timeUs); };

    std::map<std::string, std::vector<size_t>, std::less<>> open; // name → indices into spans, innermost last
    for (const Annotation& annotation : snapshot.annotations) {
        if (!annotationOnDevice(annotation, device.device))
            continue;
        const std::string_view name = annotationField(annotation, "name");
        if (name.empty())
            continue;
        const std::string_view stage = annotationField(annotation, "stage");
        if (stage == "END") {
            auto it = open.find(name);
            if (it == open.end() || it->second.empty())
                continue; // its START is older than the annotations kept
            AnnotationSpan& span = spans[it->second.back()];
            it->second.pop_back();
            span.endUs = annotation.timeUs;
            span.closed = true;
            continue;
        }
        AnnotationSpan span;
        span.name = std::string(name);
        span.startUs = annotation.timeUs;
        span.endUs = annotation.timeUs;
        span.mark = stage != "START";
        span.closed = span.mark;
        if (!span.mark)
            open[span.name].push_back(spans.size());
        spans.push_back(std::move(span));
    }
    for (AnnotationSpan& span : spans) {
        if (!span.closed)
            span.endUs = std::max(span.startUs, lastTime);
        span.firstEvent = firstEventAt(span.startUs);
        span.lastEvent = span.mark ? span.firstEvent : firstEventAt(span.endUs + 1) - 1;
    }
    addMetadataSpans(snapshot, *trace, spans);

    std::stable_sort(spans.begin(), spans.end(), [](const AnnotationSpan& a, const AnnotationSpan& b) {
        return a.startUs != b.startUs ? a.startUs < b.startUs : a.endUs > b.endUs; // outer before inner
    });
    // Depth: how many earlier spans are still open at this one's start.
    std::vector<int64_t> openEnds;
    for (AnnotationSpan& span : spans) {
        std::erase_if(openEnds,
            [&](int64_t end) { return end <= span.startUs; }); // µs ties: the next step starts as the last ends
        span.depth = static_cast<int>(openEnds.size());
        if (!span.mark)
            openEnds.push_back(span.endUs);
    }
    return spans;
}

std::vector<const AnnotationSpan*> spansAt(const std::vector<AnnotationSpan>& spans, int64_t event)
{
    std::vector<const AnnotationSpan*> holding;
    for (const AnnotationSpan& span : spans) {
        if (!span.mark && span.firstEvent <= event && event <= span.lastEvent)
            holding.push_back(&span);
    }
    std::stable_sort(holding.begin(), holding.end(),
        [](const AnnotationSpan* a, const AnnotationSpan* b) { return a->depth < b->depth; });
    return holding;
}

} // namespace oomlens
