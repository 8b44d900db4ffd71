#include "core/presentation/explain.h"
#include "core/presentation/messagenumbers.h"
#include "core/report/reportsections.h"

namespace oomlens::report::sections {

// Each OOM message with its numbers explained, and the traceback that came with it.
void oomMessages(HtmlWriter& html, const ReportContext& context)
{
    if (context.input.text.oomMessages.empty())
        return;
    html.beginSection("oom-messages", "The OOM message, explained");
    for (const OomMessage& message : context.input.text.oomMessages) {
        html.raw("<div class=\"figure\">\n");
        std::string heading
            = message.exception.empty() ? backendText(message.backend) + " out of memory" : message.exception;
        if (message.device)
            heading += " on device " + std::to_string(*message.device);
        html.element("h3", heading);
        html.raw("\n<pre><code>");
        html.text(message.text);
        html.raw("</code></pre>\n");
        std::string facts = "Backend " + backendText(message.backend);
        if (message.templateId != OomTemplate::None)
            facts += ", message template " + oomTemplateText(message.templateId);
        html.element("p", facts + ".", "note");
        html.raw("\n");
        html.list(explainOomMessage(message));
        const std::vector<ExplainedNumber> rows = explainMessageNumbers(message);
        if (!rows.empty()) {
            html.raw("<details class=\"numbers\" open><summary>Every number in the message</summary>\n<table>\n"
                     "<tr><th>number</th><th class=\"num\">value</th><th>what it means</th></tr>\n");
            for (const ExplainedNumber& row : rows) {
                html.raw("<tr>");
                html.element("td", row.label);
                html.element("td", row.value, "num");
                html.element("td", row.detail);
                html.raw("</tr>\n");
            }
            html.raw("</table>\n</details>\n");
        }
        if (message.traceback && !message.traceback->frames.empty()) {
            html.raw("<details><summary>");
            html.text("Traceback (" + std::to_string(message.traceback->frames.size()) + " frames)");
            html.raw("</summary><pre><code>");
            for (const TracebackFrame& frame : message.traceback->frames) {
                html.text(frame.filename + ":" + std::to_string(frame.line) + " in " + frame.function + "\n");
                if (!frame.code.empty())
                    html.text("    " + frame.code + "\n");
            }
            html.raw("</code></pre></details>\n");
        }
        html.raw("</div>\n");
    }
    html.endSection();
}

} // namespace oomlens::report::sections
