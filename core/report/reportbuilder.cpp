#include "core/report/reportbuilder.h"

#include "core/presentation/cardreconciliation.h"
#include "core/presentation/labels.h"
#include "core/report/htmlescape.h"
#include "core/report/reportstyle.h"
#include "core/units.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace oomlens::report {

std::string buildHtmlReport(const Case& input, const CaseAnalysis& analysis, const ReportOptions& options)
{
    return ReportBuilder(input, analysis, options).build();
}

ReportBuilder::ReportBuilder(const Case& input, const CaseAnalysis& analysis, const ReportOptions& options)
    : m_case(input)
    , m_analysis(analysis)
    , m_options(options)
{ }

std::string ReportBuilder::build()
{
    m_out.clear();
    writeHead();
    raw("<body>\n<main>\n");
    writeHeader();
    writeNavigation();
    writeJob();
    writeDiagnoses();
    writeComparison();
    writePlan();
    writeSnapshots();
    writeProfilerTimelines();
    writeOomMessages();
    writeSummaries();
    writeCaptureAdvice();
    writeInputs();
    writeFooter();
    raw("</main>\n</body>\n</html>\n");
    return std::move(m_out);
}

void ReportBuilder::text(std::string_view content)
{
    appendEscaped(m_out, content);
}

void ReportBuilder::element(std::string_view tag, std::string_view content, std::string_view cssClass)
{
    raw("<");
    raw(tag);
    if (!cssClass.empty()) {
        raw(" class=\"");
        text(cssClass);
        raw("\"");
    }
    raw(">");
    text(content);
    raw("</");
    raw(tag);
    raw(">");
}

void ReportBuilder::beginSection(std::string_view id, std::string_view heading)
{
    raw("<section id=\"");
    raw(id);
    raw("\">\n");
    element("h2", heading);
    raw("\n");
}

void ReportBuilder::keyValueRow(std::string_view key, std::string_view value)
{
    raw("<tr>");
    element("th", key);
    element("td", value);
    raw("</tr>\n");
}

std::optional<uint64_t> ReportBuilder::capacityBytes() const
{
    for (const OomMessage& message : m_case.text.oomMessages) {
        if (message.totalBytes)
            return message.totalBytes;
    }
    for (const NvidiaSmiTable& table : m_case.text.nvidiaSmi) {
        for (const NvidiaSmiGpu& gpu : table.gpus) {
            if (gpu.totalBytes)
                return gpu.totalBytes;
        }
    }
    return std::nullopt;
}

std::string ReportBuilder::title() const
{
    if (!m_options.title.empty())
        return m_options.title;
    if (!m_analysis.diagnoses.empty())
        return "Out of memory: " + m_analysis.diagnoses.front().title;
    if (planOnly())
        return planTitle();
    if (!m_case.text.oomMessages.empty())
        return "Out of memory report";
    return "GPU memory report";
}

void ReportBuilder::writeHead()
{
    // No script at all: the report must be safe to open from an e-mail, and the CSP makes the
    // browser refuse anything an escaping bug might let through.
    raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"color-scheme\" content=\"light dark\">\n"
        "<meta name=\"generator\" content=\"oomlens " OOMLENS_VERSION "\">\n<title>");
    text(title());
    raw("</title>\n<style>");
    raw(reportStyleSheet());
    raw("</style>\n</head>\n");
}

void ReportBuilder::writeHeader()
{
    raw("<header>\n");
    element("h1", title());
    raw("\n");
    if (planOnly()) {
        element("p", planSubtitle(), "subtitle");
        raw("\n</header>\n");
        return;
    }
    std::string subtitle = std::to_string(m_case.inputs.size()) + (m_case.inputs.size() == 1 ? " input" : " inputs");
    if (!m_case.text.oomMessages.empty()) {
        const OomMessage& message = m_case.text.oomMessages.front();
        if (message.requestedBytes)
            subtitle += " · failed request " + formatBytes(*message.requestedBytes);
        if (message.phase != Phase::Unknown)
            subtitle += " in " + phaseInSentence(message.phase);
    }
    if (const auto capacity = capacityBytes())
        subtitle += " · GPU capacity " + formatBytes(*capacity);
    element("p", subtitle, "subtitle");
    raw("\n</header>\n");
}

void ReportBuilder::writeNavigation()
{
    raw("<nav><ul>");
    const auto link = [this](std::string_view id, std::string_view label) {
        raw("<li><a href=\"#");
        raw(id);
        raw("\">");
        text(label);
        raw("</a></li>");
    };
    if (m_options.job)
        link("job", "Job: every rank");
    if (!planOnly())
        link("diagnosis", "Diagnosis");
    if (m_options.comparison)
        link("comparison", "Comparison");
    if (m_options.plan)
        link("plan", "Memory plan");
    if (!m_analysis.snapshots.empty())
        link("snapshots", "Timeline and memory at the peak");
    if (reconcileCard(m_case, m_analysis).available())
        link("card", "The card's memory");
    if (!m_case.profilerTimelines.empty())
        link("profiler", "torch.profiler memory timeline");
    if (!m_case.text.oomMessages.empty())
        link("oom-messages", "OOM message explained");
    if (!m_case.text.summaries.empty())
        link("summaries", "memory_summary()");
    if (!captureAdviceReason().empty())
        link("capture", "Capturing a better snapshot");
    if (!planOnly())
        link("inputs", "Inputs and versions");
    raw("</ul></nav>\n");
}

void ReportBuilder::writeDiagnoses()
{
    if (planOnly())
        return; // a plan made before any run: there is nothing to diagnose, and saying so is noise
    beginSection("diagnosis", "Diagnosis");
    if (m_analysis.diagnoses.empty()) {
        element("p",
            m_case.text.oomMessages.empty() && m_case.snapshots.empty()
                ? "Nothing to diagnose: no OOM message and no memory snapshot could be read from the inputs."
                : "No diagnosis matched the evidence in these inputs. The sections below show what was found.",
            "note");
        endSection();
        return;
    }
    for (const Diagnosis& diagnosis : m_analysis.diagnoses) {
        raw("<article class=\"card\" id=\"diagnosis-");
        text(diagnosisIdName(diagnosis.id));
        raw("\">\n<h3>");
        text(diagnosis.title);
        char confidence[48];
        std::snprintf(confidence, sizeof confidence, "confidence %d%%",
            static_cast<int>(std::lround(std::clamp(diagnosis.confidence, 0.0, 1.0) * 100)));
        raw(" ");
        element("span", confidence, "confidence");
        raw("</h3>\n");
        if (!diagnosis.summary.empty())
            element("p", diagnosis.summary);
        if (!diagnosis.evidence.empty()) {
            raw("\n<p><strong>Evidence</strong></p>\n<ul class=\"evidence\">\n");
            for (const Evidence& evidence : diagnosis.evidence) {
                element("li", evidence.text);
                raw("\n");
            }
            raw("</ul>\n");
        }
        if (!diagnosis.fixes.empty()) {
            raw("<p><strong>Fixes, cheapest first</strong></p>\n<ol class=\"fixes\">\n");
            for (const Fix& fix : diagnosis.fixes) {
                raw("<li><strong>");
                text(fix.title);
                raw("</strong>");
                if (fix.projectedSavingBytes) {
                    raw(" ");
                    std::string saving
                        = "saves about " + formatBytes(static_cast<uint64_t>(std::llabs(*fix.projectedSavingBytes)));
                    if (fix.fitsAfter)
                        saving += *fix.fitsAfter ? ", fits" : ", not enough alone";
                    element("span", saving, "saving");
                }
                if (fix.changesExperiment) {
                    raw(" ");
                    element("span", "changes the experiment", "badge experiment");
                }
                raw("\n");
                if (!fix.detail.empty())
                    element("p", fix.detail);
                if (!fix.snippet.empty()) {
                    raw("<pre><code>");
                    text(fix.snippet);
                    raw("</code></pre>");
                }
                raw("</li>\n");
            }
            raw("</ol>\n");
        }
        raw("</article>\n");
    }
    endSection();
}

void ReportBuilder::writeInputs()
{
    if (planOnly())
        return;
    beginSection("inputs", "Inputs and versions");
    raw("<table>\n<tr><th>input</th><th>kind</th><th>status</th></tr>\n");
    for (const CaseInput& input : m_case.inputs) {
        raw("<tr>");
        raw("<td><code>");
        text(input.path);
        raw("</code></td>");
        element("td", inputKindLabel(input.kind));
        if (input.error) {
            raw("<td><span class=\"badge error\">not read</span> ");
            text(*input.error);
            raw("</td>");
        } else {
            raw("<td><span class=\"badge ok\">read</span></td>");
        }
        raw("</tr>\n");
    }
    raw("</table>\n");

    raw("<table>\n");
    std::set<std::string> versions;
    for (const OomMessage& message : m_case.text.oomMessages) {
        if (!message.torchVersionHint.empty())
            versions.insert(message.torchVersionHint + " (from the OOM message wording)");
    }
    for (const auto& snapshot : m_case.snapshots) {
        switch (snapshot->era) {
        case Snapshot::Era::SegmentList:
            versions.insert("1.13 or older (snapshot is a bare segment list)");
            break;
        case Snapshot::Era::BlockHistory:
            versions.insert("1.13–2.0 (snapshot blocks carry history)");
            break;
        case Snapshot::Era::Traces:
            versions.insert("2.0 or newer (snapshot has device traces)");
            break;
        }
    }
    std::string joined;
    for (const std::string& version : versions)
        joined += (joined.empty() ? "" : "; ") + version;
    keyValueRow("PyTorch", joined.empty() ? "unknown" : joined);

    for (const NvidiaSmiTable& table : m_case.text.nvidiaSmi) {
        for (const NvidiaSmiGpu& gpu : table.gpus) {
            std::string description = gpu.name;
            if (gpu.totalBytes)
                description += ", " + formatBytes(*gpu.totalBytes);
            if (gpu.usedBytes)
                description += ", " + formatBytes(*gpu.usedBytes) + " in use";
            keyValueRow("GPU " + std::to_string(gpu.index), description);
        }
        if (!table.driverVersion.empty())
            keyValueRow("NVIDIA driver", table.driverVersion);
        if (!table.cudaVersion.empty())
            keyValueRow("CUDA (driver)", table.cudaVersion);
    }
    for (const OomMessage& message : m_case.text.oomMessages) {
        if (message.totalBytes) {
            std::string device
                = backendText(message.backend) + (message.device ? " device " + std::to_string(*message.device) : "");
            keyValueRow("GPU capacity", formatBytes(*message.totalBytes) + " (" + device + ", from the OOM message)");
            break;
        }
    }
    for (const AllocConfSetting& setting : m_case.text.allocConfs)
        keyValueRow("Allocator settings", setting.raw + (setting.source.empty() ? "" : " (" + setting.source + ")"));
    for (const auto& snapshot : m_case.snapshots) {
        if (snapshot->allocatorSettings) {
            const AllocatorSettings& settings = *snapshot->allocatorSettings;
            std::string description = settings.allocConf.empty() ? "PYTORCH_CUDA_ALLOC_CONF unset" : settings.allocConf;
            description += settings.expandableSegments ? "; expandable segments on" : "; expandable segments off";
            if (settings.maxSplitSize >= 0)
                description += "; max split size " + formatBytes(static_cast<uint64_t>(settings.maxSplitSize));
            keyValueRow("Allocator settings (snapshot)", description);
        }
        std::string container = snapshot->container;
        if (snapshot->pickleProtocol > 0)
            container += ", pickle protocol " + std::to_string(snapshot->pickleProtocol);
        if (!container.empty())
            keyValueRow("Snapshot container", container);
    }
    raw("</table>\n");
    endSection();
}

void ReportBuilder::writeFooter()
{
    raw("<footer>");
    std::string line = "Written by oomlens " OOMLENS_VERSION;
    if (!m_options.generatedAt.empty())
        line += " on " + m_options.generatedAt;
    line += ". This file is self-contained: it loads nothing from the network and runs no script.";
    text(line);
    raw("</footer>\n");
}

} // namespace oomlens::report
