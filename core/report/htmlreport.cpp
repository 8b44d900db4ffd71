#include "core/report/htmlreport.h"

#include "core/report/reportsections.h"

namespace oomlens::report {

namespace {

using Section = void (*)(HtmlWriter&, const ReportContext&);

// The report from top to bottom: what failed and why first (the verdict, then the timeline, which
// is what a reader looks for next), the whole ladder after them, the inputs last.
constexpr Section bodySections[] = {
    sections::header,
    sections::navigation,
    sections::job,
    sections::verdict,
    sections::comparison,
    sections::plan,
    sections::snapshots,
    sections::diagnoses,
    // After the timeline; a text-only case has it too.
    sections::card,
    sections::serving,
    sections::profilerTimelines,
    sections::oomMessages,
    sections::summaries,
    sections::captureAdvice,
    sections::inputs,
    sections::footer,
};

} // namespace

std::string buildHtmlReport(const Case& input, const CaseAnalysis& analysis, const ReportOptions& options)
{
    const ReportContext context(input, analysis, options);
    HtmlWriter html;
    sections::head(html, context);
    html.raw("<body>\n<main>\n");
    for (const Section section : bodySections)
        section(html, context);
    html.raw("</main>\n</body>\n</html>\n");
    return html.finish();
}

} // namespace oomlens::report
