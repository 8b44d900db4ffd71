#include "core/diagnosis/diagnosistext.h"
#include "core/presentation/verdict.h"
#include "core/report/reportsections.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
    html.raw("<article class=\"card verdict\">\n<h3>");
    html.text(diagnosis.title);
    char confidence[48];
    std::snprintf(confidence, sizeof confidence, "confidence %d%%",
        static_cast<int>(std::lround(std::clamp(diagnosis.confidence, 0.0, 1.0) * 100)));
    html.raw(" ");
    html.element("span", confidence, "confidence");
    html.raw("</h3>\n");
    if (!diagnosis.summary.empty())
        html.element("p", diagnosis.summary);
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
