#include "core/presentation/explain.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <array>

namespace oomlens::report::sections {

namespace {

struct SummaryMetric
{
    const char* key;
    const char* label;
    bool bytes;
};

constexpr std::array<SummaryMetric, 11> summaryMetrics = { {
    { "allocated_memory", "Allocated memory", true },
    { "active_memory", "Active memory", true },
    { "requested_memory", "Requested memory", true },
    { "gpu_reserved_memory", "GPU reserved memory", true },
    { "non_releasable_memory", "Non-releasable memory", true },
    { "allocations", "Allocations", false },
    { "active_allocs", "Active allocs", false },
    { "gpu_reserved_segments", "GPU reserved segments", false },
    { "non_releasable_allocs", "Non-releasable allocs", false },
    { "oversize_allocations", "Oversize allocations", false },
    { "oversize_gpu_segments", "Oversize GPU segments", false },
} };

std::string summaryValue(const std::optional<uint64_t>& value, bool bytes)
{
    if (!value)
        return "—";
    return bytes ? formatBytes(*value) : std::to_string(*value);
}

} // namespace

// torch.cuda.memory_summary() tables, read and explained.
void summaries(HtmlWriter& html, const ReportContext& context)
{
    if (context.input.text.summaries.empty())
        return;
    html.beginSection("summaries", "torch.cuda.memory_summary()");
    for (const MemorySummary& summary : context.input.text.summaries) {
        html.element("h3", "Device " + std::to_string(summary.device));
        html.raw("\n");
        html.list(explainSummary(summary));
        if (summary.truncated)
            html.element("p", "The table was cut off; rows after the cut are missing.", "note");
        html.raw("<table>\n<tr><th>metric</th><th class=\"num\">current</th><th class=\"num\">peak</th>"
                 "<th class=\"num\">total allocated</th><th class=\"num\">total freed</th></tr>\n");
        for (const SummaryMetric& metric : summaryMetrics) {
            const auto found = summary.rows.find(metric.key);
            if (found == summary.rows.end())
                continue;
            const SummaryRow& row = found->second;
            html.raw("<tr>");
            html.element("td", metric.label);
            html.element("td", summaryValue(row.current, metric.bytes), "num");
            html.element("td", summaryValue(row.peak, metric.bytes), "num");
            html.element("td", summaryValue(row.allocated, metric.bytes), "num");
            html.element("td", summaryValue(row.freed, metric.bytes), "num");
            html.raw("</tr>\n");
        }
        html.raw("</table>\n");
    }
    html.endSection();
}

} // namespace oomlens::report::sections
