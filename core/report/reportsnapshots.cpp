#include "core/presentation/historywords.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/units.h"

namespace oomlens::report::sections {

namespace {

// What the device's trace holds in one paragraph: events, peak, steps, OOMs, truncation.
std::string deviceFacts(const ShownSnapshot& shown)
{
    const Snapshot& snapshot = *shown.analysis->snapshot;
    const DeviceAnalysis& device = *shown.device;
    const std::vector<int32_t> devices = snapshot.devices();
    std::string facts;
    if (devices.size() > 1) {
        facts += "Devices present:";
        for (int32_t ordinal : devices)
            facts += " " + std::to_string(ordinal);
        facts += "; this section shows device " + std::to_string(device.device) + ". ";
    }
    if (shown.history.segmentsOnly()) {
        // Without allocations in the trace the only moment is the dump: no peak to speak of.
        facts += groupedNumber(static_cast<int64_t>(shown.history.traceEvents)) + " trace events (no allocation), "
            + formatBytes(device.peakAllocatedBytes) + " allocated and " + formatBytes(device.peakReservedBytes)
            + " reserved at the dump";
    } else {
        const DeviceTrace* trace = snapshot.trace(device.device);
        facts += groupedNumber(trace ? static_cast<int64_t>(trace->events.size()) : 0)
            + " trace events, peak allocated " + formatBytes(device.peakAllocatedBytes) + " ("
            + parts::eventLabel(device.peakEvent) + ")";
        if (device.peakReservedBytes > 0)
            facts += ", peak reserved " + formatBytes(device.peakReservedBytes);
    }
    if (device.stepCount > 0)
        facts += ", " + std::to_string(device.stepCount)
            + (device.stepCount == 1 ? " training step" : " training steps") + " seen";
    if (!device.ooms.empty())
        facts += ", " + std::to_string(device.ooms.size()) + " OOM event" + (device.ooms.size() > 1 ? "s" : "");
    facts += ".";
    if (device.traceTruncated)
        facts += " The trace is truncated: allocations older than it were recovered from the segments at the dump.";
    return facts;
}

// A trace that missed part of the run says so, and how to record more.
void history(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const TraceHistory& history = shown.history;
    if (history.segmentsOnly())
        html.raw("<div class=\"history segments-only\">\n");
    else
        html.raw("<div class=\"history truncated\">\n");
    for (const std::string& line : historyStatement(*shown.analysis->snapshot, history))
        html.element("p", line);
    if (context.captureAdviceReason.empty()) {
        html.element("p", historyAdvice(history), "note");
        html.raw("\n<pre><code>");
        html.text(historyRecordingSnippet(shown.backend));
        html.raw("</code></pre>\n");
    } else {
        // The capture section below has the recipe; one copy of it is enough.
        html.raw("<p class=\"note\">How to record more: see <a href=\"#capture\">Capturing a better snapshot</a> "
                 "below.</p>\n");
    }
    html.raw("</div>\n");
}

void snapshot(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    if (!shown.analysis->snapshot)
        return;
    std::string heading = "Snapshot " + (shown.path.empty() ? std::to_string(shown.index + 1) : shown.path);
    // A snapshot another backend wrote in CUDA's format is named as such ("· Intel XPU device 0").
    const std::string backend
        = shown.backend == SnapshotBackend::Cuda ? std::string() : std::string(snapshotBackendLabel(shown.backend));
    if (shown.device)
        heading += " · " + (backend.empty() ? std::string() : backend + " ") + "device "
            + std::to_string(shown.device->device);
    else if (!backend.empty())
        heading += " · " + backend;
    html.element("h3", heading);
    html.raw("\n");
    if (!shown.device) {
        html.element("p", "This snapshot has no device with segments or trace events.", "note");
        pinnedHostMemory(html, shown);
        return;
    }
    html.element("p", deviceFacts(shown));
    html.raw("\n");
    if (shown.history.segmentsOnly() || shown.history.truncated())
        history(html, context, shown);
    if (!shown.history.segmentsOnly())
        timeline(html, context, shown);
    breakdown(html, shown);
    allocatorMap(html, context, shown);
    privatePools(html, context, shown);
    pendingFrees(html, context, shown);
    annotations(html, context, shown);
    topAllocations(html, context, shown);
    pinnedHostMemory(html, shown);
}

} // namespace

void snapshots(HtmlWriter& html, const ReportContext& context)
{
    if (context.snapshots.empty())
        return;
    html.beginSection("snapshots", "Timeline and memory at the peak");
    for (const ShownSnapshot& shown : context.snapshots)
        snapshot(html, context, shown);
    html.endSection();
}

} // namespace oomlens::report::sections
