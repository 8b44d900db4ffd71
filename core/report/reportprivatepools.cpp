#include "core/report/reportbuilder.h"

#include "core/analysis/poolowners.h"
#include "core/presentation/privatepoolsjson.h"
#include "core/units.h"

namespace oomlens::report {

// The private pools of a snapshot that has any (CUDA graphs, MemPools): one row per pool, what
// its free blocks hold back from every other request, and the OOM message's figure against it.
void ReportBuilder::writePrivatePools(size_t index)
{
    const std::optional<PrivatePools> pools = casePrivatePools(m_case, m_analysis, index);
    if (!pools || !pools->hasPrivate())
        return;
    raw("<h3>Private pools (CUDA graphs, MemPools)</h3>\n");
    element("p",
        formatBytes(pools->privateReservedBytes()) + " is reserved by private pools at the dump, "
            + formatBytes(pools->privateFreeBytes())
            + " of it free but held: only the graph capture or the MemPool that owns a pool can use its free "
              "blocks, so for every other request they are as good as gone.");
    raw("\n<table class=\"pools\">\n<tr><th>Pool</th><th>Segments</th><th>Reserved</th><th>Allocated</th>"
        "<th>Freed, in use by a stream</th><th>Free but held</th><th>Largest free block</th><th>Holds</th></tr>\n");
    for (const PoolAtDump& pool : pools->pools) {
        raw("<tr><td>");
        text(poolName(pool.id));
        raw("</td><td>");
        text(std::to_string(pool.segments.size()));
        for (uint64_t bytes :
            { pool.reservedBytes, pool.allocatedBytes, pool.pendingFreeBytes, pool.freeBytes, pool.largestFreeBlock }) {
            raw("</td><td>");
            text(formatBytes(bytes));
        }
        raw("</td><td>");
        text(pool.heldBy.text.empty() ? std::string("\u2014") : pool.heldBy.text);
        raw("</td></tr>\n");
    }
    raw("</table>\n");
    if (pools->atOom)
        element("p", pools->atOom->statement, pools->atOom->messageBytes && !pools->atOom->agrees ? "" : "note");
    raw("\n");
}

} // namespace oomlens::report
