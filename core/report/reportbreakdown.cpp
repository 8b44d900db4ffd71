#include "core/presentation/labels.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace oomlens::report::sections {

namespace {

std::string percent(uint64_t part, uint64_t whole)
{
    if (whole == 0)
        return "—";
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return buffer;
}

} // namespace

// What was live by category at the peak (or the dump) and at each OOM, as bars and as a table.
void breakdown(HtmlWriter& html, const ShownSnapshot& shown)
{
    const DeviceAnalysis& device = *shown.device;
    std::vector<BreakdownRow> rows;
    rows.push_back({ parts::dumpStateOnly(device) ? "at the dump" : "at the peak", device.categoriesAtPeak });
    for (size_t k = 0; k < device.ooms.size(); ++k)
        rows.push_back({ device.ooms.size() > 1 ? "at OOM " + std::to_string(k + 1) : "at the OOM",
            device.ooms[k].liveByCategory });
    html.raw("<h3>What was live, by category</h3>\n<div class=\"figure\">\n");
    html.svg(breakdownSvg(rows));
    html.raw("\n</div>\n<table>\n<tr><th>category</th>");
    for (const BreakdownRow& row : rows) {
        html.element("th", row.label, "num");
        html.element("th", "share", "num");
    }
    html.raw("</tr>\n");
    std::vector<uint64_t> totals;
    for (const BreakdownRow& row : rows)
        totals.push_back(std::accumulate(row.bytes.begin(), row.bytes.end(), uint64_t(0)));
    for (int c = 0; c < categoryCount; ++c) {
        const bool empty = std::all_of(
            rows.begin(), rows.end(), [c](const BreakdownRow& row) { return row.bytes[static_cast<size_t>(c)] == 0; });
        if (empty && !listedWhenEmpty(static_cast<Category>(c)))
            continue;
        html.raw("<tr>");
        parts::categoryCell(html, static_cast<Category>(c));
        for (size_t r = 0; r < rows.size(); ++r) {
            const uint64_t bytes = rows[r].bytes[static_cast<size_t>(c)];
            html.element("td", formatBytes(bytes), "num");
            html.element("td", percent(bytes, totals[r]), "num");
        }
        html.raw("</tr>\n");
    }
    html.raw("<tr><th>total</th>");
    for (uint64_t total : totals) {
        html.element("th", formatBytes(total), "num");
        html.element("th", "", "num");
    }
    html.raw("</tr>\n</table>\n");
}

} // namespace oomlens::report::sections
