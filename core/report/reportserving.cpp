#include "core/report/reportsections.h"

#include "core/serving/servingfixes.h"
#include "core/serving/servingtext.h"
#include "core/units.h"

#include <cstdio>

namespace oomlens::report::sections {

// The inference run: the engine, the card as the engine split it, the settings it printed.
void serving(HtmlWriter& html, const ReportContext& context)
{
    if (!context.analysis.serving)
        return;
    const ServingView& view = *context.analysis.serving;
    html.beginSection("serving", "The inference engine's budget");
    html.element("p",
        servingWorkloadLine(view) + ". Named by "
            + (view.run.engineEvidence.line > 0 ? view.run.engineEvidence.cite() : view.run.engineEvidence.text));
    if (!view.rows.empty()) {
        html.raw("<table class=\"card-reconciliation\">\n<tr><th>figure</th><th "
                 "class=\"num\">bytes</th><th>from</th></tr>\n");
        for (const ServingBudgetRow& row : view.rows) {
            html.raw("<tr>");
            html.element("td", row.label);
            html.element("td", signedBytesText(row.bytes), "num");
            html.element("td", row.source);
            html.raw("</tr>\n");
        }
        html.raw("</table>\n");
    }
    std::vector<std::string> items;
    for (const ServingSetting& setting : view.run.settings) {
        if (view.run.setting(setting.key) == &setting)
            items.push_back(setting.key + " " + settingText(setting.value) + " (" + setting.source.cite() + ")");
    }
    if (view.kvBytesPerToken)
        items.push_back("KV cache per token: " + formatBytes(static_cast<uint64_t>(*view.kvBytesPerToken)) + ", from "
            + view.kvBytesPerTokenSource);
    html.list(items);
    html.endSection();
}

} // namespace oomlens::report::sections
