#include "core/planner/planresult.h"
#include "core/planner/plantext.h"
#include "core/presentation/labels.h"
#include "core/report/reportsections.h"
#include "core/report/reportstyle.h"
#include "core/units.h"

namespace oomlens::report::sections {

void head(HtmlWriter& html, const ReportContext& context)
{
    // No script at all: the report must be safe to open from an e-mail, and the CSP makes the
    // browser refuse anything an escaping bug might let through.
    html.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
             "img-src data:\">\n"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
             "<meta name=\"color-scheme\" content=\"light dark\">\n"
             "<meta name=\"generator\" content=\"oomlens " OOMLENS_VERSION "\">\n<title>");
    html.text(context.title);
    html.raw("</title>\n<style>");
    html.styleSheet(reportStyleSheet());
    html.raw("</style>\n</head>\n");
}

void header(HtmlWriter& html, const ReportContext& context)
{
    html.raw("<header>\n");
    html.element("h1", context.title);
    html.raw("\n");
    if (context.planOnly) {
        const planner::PlanResult& plan = *context.options.plan;
        std::string subtitle = planner::describeSetup(plan.setup);
        if (plan.card)
            subtitle += " · " + plan.card->models + " (" + formatBytes(plan.card->capacityBytes) + ")";
        html.element("p", subtitle, "subtitle");
        html.raw("\n</header>\n");
        return;
    }
    const Case& input = context.input;
    std::string subtitle = std::to_string(input.inputs.size()) + (input.inputs.size() == 1 ? " input" : " inputs");
    if (!input.text.oomMessages.empty()) {
        const OomMessage& message = input.text.oomMessages.front();
        if (message.requestedBytes)
            subtitle += " · failed request " + formatBytes(*message.requestedBytes);
        if (message.phase != Phase::Unknown)
            subtitle += " in " + phaseInSentence(message.phase);
    }
    if (context.capacityBytes)
        subtitle += " · GPU capacity " + formatBytes(*context.capacityBytes);
    html.element("p", subtitle, "subtitle");
    html.raw("\n</header>\n");
}

void navigation(HtmlWriter& html, const ReportContext& context)
{
    html.raw("<nav><ul>");
    const auto link = [&html](Markup id, std::string_view label) {
        html.raw("<li><a href=\"#");
        html.raw(id);
        html.raw("\">");
        html.text(label);
        html.raw("</a></li>");
    };
    if (context.options.job)
        link("job", "Job: every rank");
    if (!context.planOnly && !context.analysis.diagnoses.empty())
        link("verdict", "Verdict");
    if (context.options.comparison)
        link("comparison", "Comparison");
    if (context.options.plan)
        link("plan", "Memory plan");
    if (!context.analysis.snapshots.empty())
        link("snapshots", "Timeline and memory at the peak");
    if (!context.planOnly)
        link("diagnosis", "Diagnosis and every fix");
    if (context.card.available())
        link("card", "The card's memory");
    if (context.analysis.serving)
        link("serving", "The inference engine's budget");
    if (!context.input.profilerTimelines.empty())
        link("profiler", "torch.profiler memory timeline");
    if (!context.input.text.oomMessages.empty())
        link("oom-messages", "OOM message explained");
    if (!context.input.text.summaries.empty())
        link("summaries", "memory_summary()");
    if (!context.captureAdviceReason.empty())
        link("capture", "Capturing a better snapshot");
    if (!context.planOnly)
        link("inputs", "Inputs and versions");
    html.raw("</ul></nav>\n");
}

void footer(HtmlWriter& html, const ReportContext& context)
{
    html.raw("<footer>");
    std::string line = "Written by oomlens " OOMLENS_VERSION;
    if (!context.options.generatedAt.empty())
        line += " on " + context.options.generatedAt;
    line += ". This file is self-contained: it loads nothing from the network and runs no script.";
    html.text(line);
    html.raw("</footer>\n");
}

} // namespace oomlens::report::sections
