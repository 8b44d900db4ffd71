#include "core/diagnosis/diagnosistext.h"
#include "core/presentation/verdict.h"
#include "core/report/reportsections.h"

namespace oomlens::report::sections {

// The answer at a glance, above the timeline: the verdict, the evidence that decided it and the
// first fix that makes the run fit (presentation/verdict.h, as the terminal prints it). The whole
// ladder of every diagnosis follows the timeline.
void verdict(HtmlWriter& html, const ReportContext& context)
{
    if (context.planOnly)
        return;
    const Verdict verdict = verdictOf(context.analysis);
    if (verdict.empty())
        return; // the diagnosis section says why there is none
    const Diagnosis& diagnosis = *verdict.diagnosis;
    html.beginSection("verdict", "Verdict");
    html.raw("<article class=\"card verdict\">\n");
    parts::diagnosisHeading(html, diagnosis);
    if (!verdict.evidence.empty()) {
        html.raw("\n<ul class=\"evidence\">\n");
        for (const Evidence* evidence : verdict.evidence) {
            html.element("li", evidence->text);
            html.raw("\n");
        }
        html.raw("</ul>\n");
    }
    if (verdict.fix) {
        if (verdict.fix->fitsAfter.value_or(false))
            html.raw("<p><strong>First fix that makes the run fit:</strong> ");
        else
            html.raw("<p><strong>First fix to try:</strong> ");
        html.text(fixHeadline(*verdict.fix));
        html.raw(" (<a href=\"#diagnosis\">every fix</a>)</p>\n");
    }
    html.raw("</article>\n");
    html.endSection();
}

} // namespace oomlens::report::sections
