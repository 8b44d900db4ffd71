#include "core/presentation/labels.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <cmath>

namespace oomlens::report::sections {

// Every diagnosis as a card: its confidence, the evidence that decided it and its fixes, cheapest first.
void diagnoses(HtmlWriter& html, const ReportContext& context)
{
    if (context.planOnly)
        return; // a plan made before any run: there is nothing to diagnose, and saying so is noise
    html.beginSection("diagnosis", "Diagnosis");
    if (context.analysis.diagnoses.empty()) {
        html.element("p",
            context.input.text.oomMessages.empty() && context.input.snapshots.empty()
                ? "Nothing to diagnose: no OOM message and no memory snapshot could be read from the inputs."
                : "No diagnosis matched the evidence in these inputs. The sections below show what was found.",
            "note");
        html.endSection();
        return;
    }
    for (const Diagnosis& diagnosis : context.analysis.diagnoses) {
        html.raw("<article class=\"card\" id=\"diagnosis-");
        html.text(diagnosisIdName(diagnosis.id));
        html.raw("\">\n");
        parts::diagnosisHeading(html, diagnosis);
        if (!diagnosis.evidence.empty()) {
            html.raw("\n<p><strong>Evidence</strong></p>\n<ul class=\"evidence\">\n");
            for (const Evidence& evidence : diagnosis.evidence) {
                html.element("li", evidence.text);
                html.raw("\n");
            }
            html.raw("</ul>\n");
        }
        if (!diagnosis.fixes.empty()) {
            html.raw("<p><strong>Fixes, cheapest first</strong></p>\n<ol class=\"fixes\">\n");
            for (const Fix& fix : diagnosis.fixes) {
                html.raw("<li><strong>");
                html.text(fix.title);
                html.raw("</strong>");
                if (fix.projectedSavingBytes) {
                    html.raw(" ");
                    std::string saving
                        = "saves about " + formatBytes(static_cast<uint64_t>(std::llabs(*fix.projectedSavingBytes)));
                    if (fix.fitsAfter)
                        saving += *fix.fitsAfter ? ", fits" : ", not enough alone";
                    html.element("span", saving, "saving");
                }
                if (fix.changesExperiment) {
                    html.raw(" ");
                    html.element("span", "changes the experiment", "badge experiment");
                }
                html.raw("\n");
                if (!fix.detail.empty())
                    html.element("p", fix.detail);
                if (!fix.snippet.empty()) {
                    html.raw("<pre><code>");
                    html.text(fix.snippet);
                    html.raw("</code></pre>");
                }
                html.raw("</li>\n");
            }
            html.raw("</ol>\n");
        }
        html.raw("</article>\n");
    }
    html.endSection();
}

} // namespace oomlens::report::sections
