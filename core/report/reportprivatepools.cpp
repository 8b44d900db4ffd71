
#include "core/analysis/poolowners.h"
#include "core/presentation/privatepoolsjson.h"
#include "core/report/reportsections.h"
#include "core/units.h"

namespace oomlens::report::sections {

// The private pools of a snapshot that has any (CUDA graphs, MemPools): one row per pool, what
// its free blocks hold back from every other request, and the OOM message's figure against it.
void privatePools(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const std::optional<PrivatePools> pools = casePrivatePools(context.input, context.analysis, shown.index);
    if (!pools || !pools->hasPrivate())
        return;
    html.raw("<h3>Private pools (CUDA graphs, MemPools)</h3>\n");
    html.element("p",
        formatBytes(pools->privateReservedBytes()) + " is reserved by private pools at the dump, "
            + formatBytes(pools->privateFreeBytes())
            + " of it free but held: only the graph capture or the MemPool that owns a pool can use its free "
              "blocks, so for every other request they are as good as gone.");
    html.raw(
        "\n<table class=\"pools\">\n<tr><th>Pool</th><th>Segments</th><th>Reserved</th><th>Allocated</th>"
        "<th>Freed, in use by a stream</th><th>Free but held</th><th>Largest free block</th><th>Holds</th></tr>\n");
    for (const PoolAtDump& pool : pools->pools) {
        html.raw("<tr><td>");
        html.text(poolName(pool.id));
        html.raw("</td><td>");
        html.text(std::to_string(pool.segments.size()));
        for (uint64_t bytes :
            { pool.reservedBytes, pool.allocatedBytes, pool.pendingFreeBytes, pool.freeBytes, pool.largestFreeBlock }) {
            html.raw("</td><td>");
            html.text(formatBytes(bytes));
        }
        html.raw("</td><td>");
        html.text(pool.heldBy.text.empty() ? std::string("\u2014") : pool.heldBy.text);
        html.raw("</td></tr>\n");
    }
    html.raw("</table>\n");
    if (pools->atOom)
        html.element("p", pools->atOom->statement, pools->atOom->messageBytes && !pools->atOom->agrees ? "" : "note");
    html.raw("\n");
}

} // namespace oomlens::report::sections
