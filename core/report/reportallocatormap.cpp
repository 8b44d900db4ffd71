#include "core/analysis/allocatorstate.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::report::sections {

// The allocator's segments and blocks at the OOM (else at the peak or the dump), and what each OOM
// request met.
void allocatorMap(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const DeviceAnalysis& device = *shown.device;
    const bool atOom = !device.ooms.empty();
    const int64_t event = atOom ? device.ooms.back().eventIndex : device.peakEvent;
    html.element("h3",
        atOom ? "Allocator state at the OOM"
              : (parts::dumpStateOnly(device) ? "Allocator state at the dump" : "Allocator state at the peak"));
    html.raw("\n");
    for (const OomAnalysis& oom : device.ooms) {
        std::string line = "At the OOM (" + parts::eventLabel(oom.eventIndex) + "): the request of "
            + formatBytes(oom.requestedBytes) + " met " + formatBytes(oom.reservedBytes) + " reserved, "
            + formatBytes(oom.allocatedBytes) + " allocated, a largest free cached block of "
            + formatBytes(oom.largestFreeBlock);
        if (oom.freeInPoolBytes > 0)
            line += " (" + formatBytes(oom.freeInPoolBytes) + " free in that pool in total)";
        line += ", and " + formatBytes(oom.deviceFreeBytes) + " free on the device.";
        if (oom.largestFreeBlock < oom.requestedBytes && oom.freeInPoolBytes >= oom.requestedBytes)
            line += " Enough cached memory was free, but not in one piece: fragmentation.";
        html.element("p", line);
        html.raw("\n");
    }
    // Rebuilt from the dump-time segments by undoing the segment events after this moment.
    const AllocatorState state = allocatorStateAt(*shown.analysis->snapshot, device, event);
    if (state.segments.empty()) {
        html.element("p", "No segments are known for this device at that moment.", "note");
        return;
    }
    uint64_t free = 0;
    uint64_t largestFree = 0;
    for (const StateSegment& segment : state.segments) {
        free += segment.freeBytes;
        largestFree = std::max(largestFree, segment.largestFree);
    }
    const size_t maxSegments = context.options.maxSegments;
    html.element("p",
        std::to_string(state.segments.size()) + " segments, " + formatBytes(state.reservedBytes) + " reserved, "
            + formatBytes(state.activeBytes) + " in live blocks, " + formatBytes(free)
            + " cached free, largest free block " + formatBytes(largestFree) + "."
            + (state.segments.size() > maxSegments
                    ? " The " + std::to_string(maxSegments) + " largest segments are drawn."
                    : std::string()),
        "note");
    html.raw("\n<div class=\"figure\">\n");
    html.svg(allocatorMapSvg(state, device, maxSegments));
    html.raw("\n<div class=\"legend\"><span>blocks coloured by category as above</span> ");
    html.legendEntry("block-pending", "freed, waiting for another stream");
    html.raw(" ");
    html.legendEntry("segment", "free (cached)");
    html.raw("</div>\n</div>\n");
}

} // namespace oomlens::report::sections
