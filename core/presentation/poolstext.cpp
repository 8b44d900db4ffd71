#include "core/presentation/poolstext.h"

#include "core/analysis/pendingfrees.h"
#include "core/presentation/privatepoolsjson.h"
#include "core/units.h"

namespace oomlens {

std::vector<std::string> privatePoolLines(const Case& input, const CaseAnalysis& analysis, size_t snapshotIndex)
{
    std::vector<std::string> lines;
    const std::optional<PrivatePools> pools = casePrivatePools(input, analysis, snapshotIndex);
    if (!pools || !pools->hasPrivate())
        return lines;
    for (const PoolAtDump& pool : pools->pools) {
        std::string line = poolName(pool.id) + ": " + formatBytes(pool.reservedBytes) + " reserved, "
            + formatBytes(pool.allocatedBytes) + " allocated";
        if (pool.pendingFreeBytes > 0)
            line += ", " + formatBytes(pool.pendingFreeBytes) + " freed but still in use by a stream";
        if (pool.isPrivate() && pool.freeBytes > 0)
            line += ", " + formatBytes(pool.freeBytes) + " free only to its own captures or use_mem_pool";
        if (!pool.heldBy.text.empty())
            line += " — " + pool.heldBy.text;
        lines.push_back(std::move(line));
    }
    if (pools->atOom && !pools->atOom->statement.empty())
        lines.push_back(pools->atOom->statement);
    return lines;
}

std::vector<std::string> pendingFreeLines(const CaseAnalysis& analysis, size_t snapshotIndex)
{
    std::vector<std::string> lines;
    if (snapshotIndex >= analysis.snapshots.size())
        return lines;
    const SnapshotAnalysis& snapshot = analysis.snapshots[snapshotIndex];
    const DeviceAnalysis* device = snapshot.primary();
    if (!snapshot.snapshot || !device)
        return lines;
    const PendingFrees pending = pendingFrees(*snapshot.snapshot, *device);
    if (!pending.any())
        return lines;
    if (!pending.windows.empty()) {
        std::string line = std::to_string(pending.windows.size()) + " frees waited for another stream; at most "
            + formatBytes(pending.maxPendingBytes) + " waited at once";
        if (pending.maxPendingEvent >= 0)
            line += " (event " + std::to_string(pending.maxPendingEvent) + ")";
        line += ", " + formatBytes(pending.atPeakBytes) + " at the peak";
        if (!device->ooms.empty())
            line += ", " + formatBytes(pending.atOomBytes) + " at the OOM";
        lines.push_back(line);
        if (pending.segmentsWhilePending > 0)
            lines.push_back(std::to_string(pending.segmentsWhilePending) + " segments ("
                + formatBytes(pending.reservedWhilePendingBytes) + ") were reserved while freed memory waited; "
                + formatBytes(pending.coverableWhilePendingBytes) + " of them the waiting frees could have covered");
    }
    if (pending.dumpPendingBlocks > 0)
        lines.push_back("at the dump " + std::to_string(pending.dumpPendingBlocks) + " blocks ("
            + formatBytes(pending.dumpPendingBytes) + ") were still waiting for their stream");
    return lines;
}

} // namespace oomlens
