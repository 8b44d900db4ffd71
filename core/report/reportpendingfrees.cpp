#include "core/report/reportbuilder.h"

#include "core/analysis/pendingfrees.h"
#include "core/units.h"

namespace oomlens::report {

// Memory the program freed that waited for another stream before the allocator could reuse it:
// how much at its most, at the peak and at the OOM, the segments reserved meanwhile, and the
// frames that released the most. Written only when the snapshot shows any.
void ReportBuilder::writePendingFrees(const SnapshotAnalysis& analysis, const DeviceAnalysis& device)
{
    const PendingFrees pending = pendingFrees(*analysis.snapshot, device);
    if (!pending.any())
        return;
    raw("<h3>Pending frees (waiting for another stream)</h3>\n");
    element("p",
        "Blocks freed by the program while work queued on another stream could still use them (record_stream, "
        "collectives on NCCL's stream) stay unusable until that work finishes; meanwhile the allocator reserves new "
        "memory for requests they could have served.");
    raw("\n<table class=\"pools\">\n");
    keyValueRow("Frees that waited", std::to_string(pending.windows.size()));
    keyValueRow("Most pending at once", formatBytes(pending.maxPendingBytes));
    keyValueRow("Pending at the peak", formatBytes(pending.atPeakBytes));
    if (!device.ooms.empty()) {
        keyValueRow("Pending at the OOM", formatBytes(pending.atOomBytes));
        keyValueRow("Returned by the allocator's wait just before the OOM", formatBytes(pending.releasedAtOomBytes));
    }
    keyValueRow("Segments reserved while blocks were pending",
        std::to_string(pending.segmentsWhilePending) + " (" + formatBytes(pending.reservedWhilePendingBytes) + ", "
            + formatBytes(pending.coverableWhilePendingBytes) + " of it the pending blocks could have served)");
    if (pending.dumpPendingBlocks > 0)
        keyValueRow("active_pending_free blocks at the dump",
            std::to_string(pending.dumpPendingBlocks) + " (" + formatBytes(pending.dumpPendingBytes) + ")");
    raw("</table>\n");
    for (const PendingReleaser& releaser : pending.releasers)
        stack(*analysis.snapshot, releaser.stack,
            "released " + formatBytes(releaser.bytes) + " in " + std::to_string(releaser.windows)
                + " frees that waited");
    raw("\n");
}

} // namespace oomlens::report
