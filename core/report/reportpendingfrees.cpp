
#include "core/analysis/pendingfrees.h"
#include "core/report/reportsections.h"
#include "core/units.h"

namespace oomlens::report::sections {

// Memory the program freed that waited for another stream before the allocator could reuse it:
// how much at its most, at the peak and at the OOM, the segments reserved meanwhile, and the
// frames that released the most. Written only when the snapshot shows any.
void pendingFrees(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const SnapshotAnalysis& analysis = *shown.analysis;
    const DeviceAnalysis& device = *shown.device;
    const PendingFrees pending = pendingFrees(*analysis.snapshot, device);
    if (!pending.any())
        return;
    html.raw("<h3>Pending frees (waiting for another stream)</h3>\n");
    html.element("p",
        "Blocks freed by the program while work queued on another stream could still use them (record_stream, "
        "collectives on NCCL's stream) stay unusable until that work finishes; meanwhile the allocator reserves new "
        "memory for requests they could have served.");
    html.raw("\n<table class=\"pools\">\n");
    html.keyValueRow("Frees that waited", std::to_string(pending.windows.size()));
    html.keyValueRow("Most pending at once", formatBytes(pending.maxPendingBytes));
    html.keyValueRow("Pending at the peak", formatBytes(pending.atPeakBytes));
    if (!device.ooms.empty()) {
        html.keyValueRow("Pending at the OOM", formatBytes(pending.atOomBytes));
        html.keyValueRow(
            "Returned by the allocator's wait just before the OOM", formatBytes(pending.releasedAtOomBytes));
    }
    html.keyValueRow("Segments reserved while blocks were pending",
        std::to_string(pending.segmentsWhilePending) + " (" + formatBytes(pending.reservedWhilePendingBytes) + ", "
            + formatBytes(pending.coverableWhilePendingBytes) + " of it the pending blocks could have served)");
    if (pending.dumpPendingBlocks > 0)
        html.keyValueRow("active_pending_free blocks at the dump",
            std::to_string(pending.dumpPendingBlocks) + " (" + formatBytes(pending.dumpPendingBytes) + ")");
    html.raw("</table>\n");
    for (const PendingReleaser& releaser : pending.releasers)
        parts::stack(html, *analysis.snapshot, releaser.stack,
            "released " + formatBytes(releaser.bytes) + " in " + std::to_string(releaser.windows)
                + " frees that waited",
            context.options.maxStackFrames);
    html.raw("\n");
}

} // namespace oomlens::report::sections
