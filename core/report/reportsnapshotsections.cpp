#include "core/report/reportbuilder.h"

#include "core/analysis/allocatorstate.h"
#include "core/presentation/cardreconciliation.h"
#include "core/presentation/cardtimeline.h"
#include "core/presentation/labels.h"
#include "core/presentation/tracehistory.h"
#include "core/presentation/userframe.h"
#include "core/report/charts.h"
#include "core/report/htmlescape.h"
#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace oomlens::report {

namespace {

const DeviceAnalysis* findDevice(const SnapshotAnalysis& analysis, int32_t ordinal)
{
    for (const DeviceAnalysis& device : analysis.devices) {
        if (device.device == ordinal)
            return &device;
    }
    return analysis.devices.empty() ? nullptr : &analysis.devices.front();
}

std::string percent(uint64_t part, uint64_t whole)
{
    if (whole == 0)
        return "—";
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buffer;
}

std::string eventLabel(int64_t event)
{
    return event < 0 ? std::string("before the trace began") : "event " + groupedNumber(event);
}

std::string whenLabel(Phase phase, int32_t step)
{
    std::string when;
    if (phase != Phase::Unknown)
        when = phaseInSentence(phase);
    if (step >= 0)
        when += (when.empty() ? "step " : " of step ") + std::to_string(step);
    return when;
}

// The allocations live right after `event`, largest first, at most `limit`.
std::vector<const Allocation*> largestLiveAt(const DeviceAnalysis& device, int64_t event, size_t limit)
{
    std::vector<const Allocation*> live;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.liveAfter(event))
            live.push_back(&allocation);
    }
    const auto larger = [](const Allocation* a, const Allocation* b) {
        if (a->requestedSize != b->requestedSize)
            return a->requestedSize > b->requestedSize;
        return a->allocEvent < b->allocEvent;
    };
    const size_t keep = std::min(limit, live.size());
    std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), larger);
    live.resize(keep);
    return live;
}

// "forward (model.py:42)": the frame a reader recognises (presentation/userframe.h).
std::string headlineFrame(const Snapshot& snapshot, StackId id)
{
    const std::optional<FrameId> chosen = userFrame(*snapshot.frames, *snapshot.strings, id);
    if (!chosen)
        return {};
    const Frame& frame = snapshot.frames->frame(*chosen);
    return std::string(snapshot.strings->get(frame.name)) + " (" + std::string(snapshot.strings->get(frame.filename))
        + ":" + std::to_string(frame.line) + ")";
}

// Without a trace the only moment is the dump: "at the peak" would promise a curve that is not there.
bool dumpStateOnly(const DeviceAnalysis& device)
{
    return std::all_of(device.allocations.begin(), device.allocations.end(),
        [](const Allocation& allocation) { return allocation.olderThanTrace(); });
}

std::string bandColor(std::string_view key)
{
    if (key == "allocated")
        return "var(--block-allocated)";
    if (key == "cached_free")
        return "var(--axis)";
    if (key == "process_outside_allocator")
        return "var(--warn)";
    if (key == "other_processes")
        return "var(--bad)";
    if (key == "unattributed")
        return "var(--block-unknown)";
    return "var(--segment)";
}

std::string percentWidth(uint64_t part, uint64_t whole)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", whole ? 100.0 * double(part) / double(whole) : 0.0);
    return buffer;
}

// The card's capacity as one bar by holder, the three views' figures in one table, and what the
// rest of the card usually is. Every text is escaped; the markup is this function's own.
std::string cardMarkup(const CardReconciliation& card)
{
    std::string out;
    if (!card.bands.empty()) {
        uint64_t total = 0;
        for (const CardBand& band : card.bands)
            total += band.bytes;
        out += "<div class=\"figure\">\n<div class=\"cardbar\" style=\"display: flex; height: 22px; border: 1px "
               "solid var(--border); border-radius: 3px; overflow: hidden\">";
        for (const CardBand& band : card.bands) {
            out += "<span data-band=\"" + band.key + "\" title=\"";
            appendEscaped(out, band.label + ": " + formatBytes(band.bytes));
            out += "\" style=\"width: " + percentWidth(band.bytes, total) + "%; background: " + bandColor(band.key)
                + "\"></span>";
        }
        out += "</div>\n<div class=\"legend\">";
        for (const CardBand& band : card.bands) {
            out += "<span><span class=\"swatch\" style=\"background: " + bandColor(band.key) + "\"></span>";
            appendEscaped(out, band.label + " " + formatBytes(band.bytes));
            out += "</span> ";
        }
        out += "</div>\n</div>\n";
    }
    out += "<table class=\"card-reconciliation\">\n<tr><th>view</th><th>figure</th><th class=\"num\">bytes</th>"
           "<th>from</th><th>what it means</th></tr>\n";
    std::optional<CardFigure::View> view;
    for (const CardFigure& figure : card.figures) {
        out += "<tr><td>";
        if (figure.view != view)
            appendEscaped(out, cardViewLabel(figure.view));
        view = figure.view;
        out += "</td><td>";
        appendEscaped(out, figure.label);
        out += "</td><td class=\"num\">";
        appendEscaped(out, figure.bytes ? formatBytes(*figure.bytes) : std::string("not given"));
        out += "</td><td>";
        appendEscaped(out, figure.source);
        out += "</td><td>";
        appendEscaped(out, figure.meaning);
        out += "</td></tr>\n";
    }
    out += "</table>\n";
    if (!card.notes.empty()) {
        out += "<ul class=\"reading\">\n";
        for (const std::string& note : card.notes) {
            out += "<li>";
            appendEscaped(out, note);
            out += "</li>\n";
        }
        out += "</ul>\n";
    }
    if (!card.parts.empty()) {
        out += "<h3>The rest of the card: what it usually is</h3>\n<table>\n<tr><th>what</th><th>typical size</th>"
               "<th>what to check</th></tr>\n";
        for (const RestOfCardPart& part : card.parts) {
            out += "<tr><td>";
            appendEscaped(out, part.name);
            out += "</td><td>";
            appendEscaped(out, part.typicalSize);
            out += "</td><td>";
            appendEscaped(out, part.whatToCheck);
            out += "</td></tr>\n";
        }
        out += "</table>\n";
    }
    return out;
}

} // namespace

void ReportBuilder::stack(const Snapshot& snapshot, StackId id, std::string_view summary)
{
    raw("<details><summary>");
    text(summary);
    raw("</summary>");
    if (!snapshot.frames || !snapshot.strings) {
        raw("</details>\n");
        return;
    }
    const FrameTable::StackView frames = snapshot.frames->stack(id);
    if (frames.empty()) {
        element("p", "No stack recorded for this allocation.", "note");
        raw("</details>\n");
        return;
    }
    raw("<pre><code>");
    const size_t shown = std::min(frames.size(), m_options.maxStackFrames);
    for (size_t i = 0; i < shown; ++i) {
        const Frame& frame = snapshot.frames->frame(frames[i]);
        text(std::string(snapshot.strings->get(frame.name)) + "  " + std::string(snapshot.strings->get(frame.filename))
            + ":" + std::to_string(frame.line) + "\n");
    }
    if (shown < frames.size())
        text("… " + std::to_string(frames.size() - shown) + " more frames\n");
    raw("</code></pre></details>\n");
}

void ReportBuilder::writeSnapshots()
{
    if (!m_analysis.snapshots.empty()) {
        beginSection("snapshots", "Timeline and memory at the peak");
        for (size_t i = 0; i < m_analysis.snapshots.size(); ++i)
            writeSnapshot(i, m_analysis.snapshots[i]);
        endSection();
    }
    // After the timeline, which is what a reader looks for first; a text-only case has it too.
    const CardReconciliation card = reconcileCard(m_case, m_analysis);
    if (card.available()) {
        beginSection("card", "The card's memory: allocator, process, card");
        raw(cardMarkup(card));
        endSection();
    }
}

void ReportBuilder::writeSnapshot(size_t index, const SnapshotAnalysis& analysis)
{
    if (!analysis.snapshot)
        return;
    const DeviceAnalysis* device = findDevice(analysis, analysis.primaryDevice);
    std::string path;
    for (const CaseInput& input : m_case.inputs) {
        if (input.snapshotIndex == static_cast<int>(index))
            path = input.path;
    }
    std::string heading = "Snapshot " + (path.empty() ? std::to_string(index + 1) : path);
    // A snapshot another backend wrote in CUDA's format is named as such ("· Intel XPU device 0").
    const SnapshotBackend backend = snapshotBackend(*analysis.snapshot, m_case.text.oomMessages);
    const std::string backendWords
        = backend == SnapshotBackend::Cuda ? std::string() : std::string(snapshotBackendLabel(backend)) + " ";
    if (device)
        heading += " · " + backendWords + "device " + std::to_string(device->device);
    else if (!backendWords.empty())
        heading += " · " + std::string(snapshotBackendLabel(backend));
    element("h3", heading);
    raw("\n");
    if (!device) {
        element("p", "This snapshot has no device with segments or trace events.", "note");
        writePinnedHostMemory(index);
        return;
    }
    const std::vector<int32_t> devices = analysis.snapshot->devices();
    std::string facts;
    if (devices.size() > 1) {
        facts += "Devices present:";
        for (int32_t ordinal : devices)
            facts += " " + std::to_string(ordinal);
        facts += "; this section shows device " + std::to_string(device->device) + ". ";
    }
    const DeviceTrace* trace = analysis.snapshot->trace(device->device);
    TraceHistory history = traceHistory(*analysis.snapshot, *device);
    history.backend = backend;
    if (history.segmentsOnly()) {
        // Without allocations in the trace the only moment is the dump: no peak to speak of.
        facts += groupedNumber(static_cast<int64_t>(history.traceEvents)) + " trace events (no allocation), "
            + formatBytes(device->peakAllocatedBytes) + " allocated and " + formatBytes(device->peakReservedBytes)
            + " reserved at the dump";
    } else {
        facts += groupedNumber(trace ? static_cast<int64_t>(trace->events.size()) : 0)
            + " trace events, peak allocated " + formatBytes(device->peakAllocatedBytes) + " ("
            + eventLabel(device->peakEvent) + ")";
        if (device->peakReservedBytes > 0)
            facts += ", peak reserved " + formatBytes(device->peakReservedBytes);
    }
    if (device->stepCount > 0)
        facts += ", " + std::to_string(device->stepCount)
            + (device->stepCount == 1 ? " training step" : " training steps") + " seen";
    if (!device->ooms.empty())
        facts += ", " + std::to_string(device->ooms.size()) + " OOM event" + (device->ooms.size() > 1 ? "s" : "");
    facts += ".";
    if (device->traceTruncated)
        facts += " The trace is truncated: allocations older than it were recovered from the segments at the dump.";
    element("p", facts);
    raw("\n");
    if (history.segmentsOnly() || history.truncated()) {
        raw(history.segmentsOnly() ? "<div class=\"history segments-only\">\n" : "<div class=\"history truncated\">\n");
        for (const std::string& line : historyStatement(*analysis.snapshot, history))
            element("p", line);
        if (captureAdviceReason().empty()) {
            element("p", historyAdvice(history), "note");
            raw("\n<pre><code>");
            text(historyRecordingSnippet(backend));
            raw("</code></pre>\n");
        } else {
            // The capture section below has the recipe; one copy of it is enough.
            raw("<p class=\"note\">How to record more: see <a href=\"#capture\">Capturing a better snapshot</a> "
                "below.</p>\n");
        }
        raw("</div>\n");
    }
    if (!history.segmentsOnly())
        writeTimeline(analysis, *device);
    writeBreakdown(*device);
    writeAllocatorMap(analysis, *device);
    writePrivatePools(index);
    writePendingFrees(analysis, *device);
    writeTopAllocations(analysis, *device);
    writePinnedHostMemory(index);
}

void ReportBuilder::writeTimeline(const SnapshotAnalysis& analysis, const DeviceAnalysis& device)
{
    const TimelineSeries curves(device);
    const TimelineChartData series = timelineChartData(*analysis.snapshot, device, curves, m_options.timelineBuckets);
    std::vector<TimelineMarker> markers;
    if (device.peakAllocatedBytes > 0)
        markers.push_back({ device.peakEvent, "peak " + formatBytes(device.peakAllocatedBytes), false });
    for (const OomAnalysis& oom : device.ooms)
        markers.push_back({ oom.eventIndex, "OOM: " + formatBytes(oom.requestedBytes) + " requested", true });
    // The rest of the card (context, libraries, other processes) on top of reserved, when an
    // input gives the card's total and this is its device.
    std::optional<CardTimelineBand> card;
    if (auto found = cardTimelineBand(reconcileCard(m_case, m_analysis)); found && found->device == device.device)
        card.emplace(followOomFigures(std::move(*found), device));
    raw("<div class=\"figure\">\n");
    raw(timelineSvg(
        series, markers, card ? std::optional<uint64_t>(card->totalBytes) : capacityBytes(), card ? &*card : nullptr));
    raw("\n<div class=\"legend\">");
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        if (!listedWhenEmpty(category) && !curves.holds(category))
            continue;
        raw("<span><span class=\"swatch ");
        raw(categoryClass(category));
        raw("\"></span>");
        text(categoryLabel(category));
        raw("</span> ");
    }
    raw("<span><span class=\"swatch reserved\"></span>reserved</span> ");
    if (card) {
        raw("<span><span class=\"swatch rest-of-card\"></span>");
        text(card->label);
        raw("</span> ");
    }
    for (int p = 1; p < phaseCount; ++p) {
        const auto phase = static_cast<Phase>(p);
        bool present = false;
        for (const PhaseRun& run : series.phases)
            present = present || run.phase == phase;
        if (!present)
            continue;
        raw("<span><span class=\"swatch phase-");
        raw(phaseName(phase));
        raw("\"></span>");
        text(std::string(phaseLabel(phase)) + " phase");
        raw("</span> ");
    }
    raw("</div>\n");
    std::string note = "Live requested bytes by category after each trace event, reduced to "
        + std::to_string(series.points.size())
        + " samples keeping each bucket's lowest and highest moment, so the peak is drawn at its true height.";
    if (device.initialAllocatedBytes > 0)
        note += " The curve starts at " + formatBytes(device.initialAllocatedBytes)
            + ": memory older than the trace, already live at its first entry (its moment is unknown).";
    element("p", note, "note");
    raw("</div>\n");
}

void ReportBuilder::writeBreakdown(const DeviceAnalysis& device)
{
    std::vector<BreakdownRow> rows;
    rows.push_back({ dumpStateOnly(device) ? "at the dump" : "at the peak", device.categoriesAtPeak });
    for (size_t k = 0; k < device.ooms.size(); ++k)
        rows.push_back({ device.ooms.size() > 1 ? "at OOM " + std::to_string(k + 1) : "at the OOM",
            device.ooms[k].liveByCategory });
    raw("<h3>What was live, by category</h3>\n<div class=\"figure\">\n");
    raw(breakdownSvg(rows));
    raw("\n</div>\n<table>\n<tr><th>category</th>");
    for (const BreakdownRow& row : rows) {
        element("th", row.label, "num");
        element("th", "share", "num");
    }
    raw("</tr>\n");
    std::vector<uint64_t> totals;
    for (const BreakdownRow& row : rows)
        totals.push_back(std::accumulate(row.bytes.begin(), row.bytes.end(), uint64_t(0)));
    for (int c = 0; c < categoryCount; ++c) {
        const bool empty = std::all_of(
            rows.begin(), rows.end(), [c](const BreakdownRow& row) { return row.bytes[static_cast<size_t>(c)] == 0; });
        if (empty && !listedWhenEmpty(static_cast<Category>(c)))
            continue;
        raw("<tr><td><span class=\"swatch ");
        raw(categoryClass(static_cast<Category>(c)));
        raw("\"></span>");
        text(categoryLabel(static_cast<Category>(c)));
        raw("</td>");
        for (size_t r = 0; r < rows.size(); ++r) {
            const uint64_t bytes = rows[r].bytes[static_cast<size_t>(c)];
            element("td", formatBytes(bytes), "num");
            element("td", percent(bytes, totals[r]), "num");
        }
        raw("</tr>\n");
    }
    raw("<tr><th>total</th>");
    for (uint64_t total : totals) {
        element("th", formatBytes(total), "num");
        element("th", "", "num");
    }
    raw("</tr>\n</table>\n");
}

void ReportBuilder::writeAllocatorMap(const SnapshotAnalysis& analysis, const DeviceAnalysis& device)
{
    const bool atOom = !device.ooms.empty();
    const int64_t event = atOom ? device.ooms.back().eventIndex : device.peakEvent;
    raw(atOom ? "<h3>Allocator state at the OOM</h3>\n"
              : (dumpStateOnly(device) ? "<h3>Allocator state at the dump</h3>\n"
                                       : "<h3>Allocator state at the peak</h3>\n"));
    for (const OomAnalysis& oom : device.ooms) {
        std::string line = "At the OOM (" + eventLabel(oom.eventIndex) + "): the request of "
            + formatBytes(oom.requestedBytes) + " met " + formatBytes(oom.reservedBytes) + " reserved, "
            + formatBytes(oom.allocatedBytes) + " allocated, a largest free cached block of "
            + formatBytes(oom.largestFreeBlock);
        if (oom.freeInPoolBytes > 0)
            line += " (" + formatBytes(oom.freeInPoolBytes) + " free in that pool in total)";
        line += ", and " + formatBytes(oom.deviceFreeBytes) + " free on the device.";
        if (oom.largestFreeBlock < oom.requestedBytes && oom.freeInPoolBytes >= oom.requestedBytes)
            line += " Enough cached memory was free, but not in one piece: fragmentation.";
        element("p", line);
        raw("\n");
    }
    // Rebuilt from the dump-time segments by undoing the segment events after this moment.
    const AllocatorState state = allocatorStateAt(*analysis.snapshot, device, event);
    if (state.segments.empty()) {
        element("p", "No segments are known for this device at that moment.", "note");
        return;
    }
    uint64_t free = 0;
    uint64_t largestFree = 0;
    for (const StateSegment& segment : state.segments) {
        free += segment.freeBytes;
        largestFree = std::max(largestFree, segment.largestFree);
    }
    element("p",
        std::to_string(state.segments.size()) + " segments, " + formatBytes(state.reservedBytes) + " reserved, "
            + formatBytes(state.activeBytes) + " in live blocks, " + formatBytes(free)
            + " cached free, largest free block " + formatBytes(largestFree) + "."
            + (state.segments.size() > m_options.maxSegments
                    ? " The " + std::to_string(m_options.maxSegments) + " largest segments are drawn."
                    : std::string()),
        "note");
    raw("\n<div class=\"figure\">\n");
    raw(allocatorMapSvg(state, device, m_options.maxSegments));
    raw("\n<div class=\"legend\"><span>blocks coloured by category as above</span> "
        "<span><span class=\"swatch block-pending\"></span>freed, waiting for another stream</span> "
        "<span><span class=\"swatch segment\"></span>free (cached)</span></div>\n</div>\n");
}

void ReportBuilder::writeTopAllocations(const SnapshotAnalysis& analysis, const DeviceAnalysis& device)
{
    const Snapshot& snapshot = *analysis.snapshot;
    const std::vector<const Allocation*> top = largestLiveAt(device, device.peakEvent, m_options.topAllocations);
    raw(dumpStateOnly(device) ? "<h3>Largest allocations live at the dump</h3>\n"
                              : "<h3>Largest allocations live at the peak</h3>\n");
    if (top.empty()) {
        element("p", "Nothing was live at the peak.", "note");
        return;
    }
    for (size_t i = 0; i < top.size(); ++i) {
        const Allocation& allocation = *top[i];
        std::string summary = std::to_string(i + 1) + ". " + formatBytes(allocation.requestedSize) + " · "
            + std::string(categoryLabel(allocation.category));
        const std::string when = whenLabel(allocation.phase, allocation.step);
        summary += " · allocated " + (when.empty() ? eventLabel(allocation.allocEvent) : "in " + when);
        if (snapshot.frames && snapshot.strings) {
            const std::string frame = headlineFrame(snapshot, allocation.stack);
            if (!frame.empty())
                summary += " · " + frame;
        }
        if (allocation.reason < device.reasons.size())
            summary += " — " + device.reasons[allocation.reason];
        stack(snapshot, allocation.stack, summary);
    }
}

} // namespace oomlens::report
