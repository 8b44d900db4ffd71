#include "core/report/reportbuilder.h"

#include "core/presentation/explain.h"
#include "core/presentation/messagenumbers.h"
#include "core/snapshotbackend.h"
#include "core/units.h"

#include <array>

namespace oomlens::report {

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

void ReportBuilder::writeList(const std::vector<std::string>& items)
{
    if (items.empty())
        return;
    raw("<ul class=\"reading\">\n");
    for (const std::string& item : items) {
        element("li", item);
        raw("\n");
    }
    raw("</ul>\n");
}

void ReportBuilder::writeOomMessages()
{
    if (m_case.text.oomMessages.empty())
        return;
    beginSection("oom-messages", "The OOM message, explained");
    for (const OomMessage& message : m_case.text.oomMessages) {
        raw("<div class=\"figure\">\n");
        std::string heading
            = message.exception.empty() ? backendText(message.backend) + " out of memory" : message.exception;
        if (message.device)
            heading += " on device " + std::to_string(*message.device);
        element("h3", heading);
        raw("\n<pre><code>");
        text(message.text);
        raw("</code></pre>\n");
        std::string facts = "Backend " + backendText(message.backend);
        if (message.templateId != OomTemplate::None)
            facts += ", message template " + oomTemplateText(message.templateId);
        element("p", facts + ".", "note");
        raw("\n");
        writeList(explainOomMessage(message));
        const std::vector<ExplainedNumber> rows = explainMessageNumbers(message);
        if (!rows.empty()) {
            raw("<details class=\"numbers\" open><summary>Every number in the message</summary>\n<table>\n"
                "<tr><th>number</th><th class=\"num\">value</th><th>what it means</th></tr>\n");
            for (const ExplainedNumber& row : rows) {
                raw("<tr>");
                element("td", row.label);
                element("td", row.value, "num");
                element("td", row.detail);
                raw("</tr>\n");
            }
            raw("</table>\n</details>\n");
        }
        if (message.traceback && !message.traceback->frames.empty()) {
            raw("<details><summary>");
            text("Traceback (" + std::to_string(message.traceback->frames.size()) + " frames)");
            raw("</summary><pre><code>");
            for (const TracebackFrame& frame : message.traceback->frames) {
                text(frame.filename + ":" + std::to_string(frame.line) + " in " + frame.function + "\n");
                if (!frame.code.empty())
                    text("    " + frame.code + "\n");
            }
            raw("</code></pre></details>\n");
        }
        raw("</div>\n");
    }
    endSection();
}

void ReportBuilder::writeSummaries()
{
    if (m_case.text.summaries.empty())
        return;
    beginSection("summaries", "torch.cuda.memory_summary()");
    for (const MemorySummary& summary : m_case.text.summaries) {
        element("h3", "Device " + std::to_string(summary.device));
        raw("\n");
        writeList(explainSummary(summary));
        if (summary.truncated)
            element("p", "The table was cut off; rows after the cut are missing.", "note");
        raw("<table>\n<tr><th>metric</th><th class=\"num\">current</th><th class=\"num\">peak</th>"
            "<th class=\"num\">total allocated</th><th class=\"num\">total freed</th></tr>\n");
        for (const SummaryMetric& metric : summaryMetrics) {
            const auto found = summary.rows.find(metric.key);
            if (found == summary.rows.end())
                continue;
            const SummaryRow& row = found->second;
            raw("<tr>");
            element("td", metric.label);
            element("td", summaryValue(row.current, metric.bytes), "num");
            element("td", summaryValue(row.peak, metric.bytes), "num");
            element("td", summaryValue(row.allocated, metric.bytes), "num");
            element("td", summaryValue(row.freed, metric.bytes), "num");
            raw("</tr>\n");
        }
        raw("</table>\n");
    }
    endSection();
}

std::string ReportBuilder::captureAdviceReason() const
{
    if (planOnly())
        return {}; // before the run there is nothing to capture yet
    if (m_case.snapshots.empty())
        return "No memory snapshot was among the inputs, so there is no timeline, no categories and no stacks of "
               "what was live at the peak. A snapshot recorded as below shows all of that.";
    for (size_t i = 0; i < m_case.snapshots.size(); ++i) {
        const Snapshot& snapshot = *m_case.snapshots[i];
        if (snapshot.totalTraceEvents() == 0)
            return "The snapshot holds no allocation trace (history was not recorded, or the PyTorch version is too "
                   "old), so the report cannot show how memory grew. Record history as below.";
        bool anyStack = false;
        for (const DeviceTrace& trace : snapshot.traces) {
            for (const TraceEvent& event : trace.events) {
                if (event.stack != FrameTable::emptyStack()) {
                    anyStack = true;
                    break;
                }
            }
            if (anyStack)
                break;
        }
        if (!anyStack)
            return "The snapshot carries no Python stacks, so allocations cannot be traced to the code that made "
                   "them. Record with stacks (the default) as below.";
        if (i < m_analysis.snapshots.size()) {
            for (const DeviceAnalysis& device : m_analysis.snapshots[i].devices) {
                if (device.traceTruncated)
                    return "The trace's ring buffer overflowed: the beginning of the run (often where the parameters "
                           "and optimizer state were allocated) is missing. Raise max_entries as below.";
            }
        }
    }
    return {};
}

void ReportBuilder::writeCaptureAdvice()
{
    const std::string reason = captureAdviceReason();
    if (reason.empty())
        return;
    beginSection("capture", "How to capture a better snapshot");
    element("p", reason);
    // In the words of the backend the case's snapshot came from: an XPU run records with torch.xpu.
    SnapshotBackend backend = SnapshotBackend::Cuda;
    for (size_t i = 0; i < m_case.snapshots.size() && backend == SnapshotBackend::Cuda; ++i)
        backend = snapshotBackendOf(m_case, i);
    const std::string memory(snapshotMemoryModule(backend));
    const std::string device = memory.substr(0, memory.rfind('.')); // torch.xpu.memory -> torch.xpu
    const std::string error
        = backend == SnapshotBackend::Cuda ? "torch.cuda.OutOfMemoryError" : "torch.OutOfMemoryError";
    raw("\n<pre><code>");
    text(std::string(backend == SnapshotBackend::Npu ? "import torch\nimport torch_npu\n\n" : "import torch\n\n")
        + "# Start before the model and optimizer are built, so parameters and optimizer state get stacks too.\n"
        + memory + "._record_memory_history(max_entries=100000)\n\n" + "try:\n" + "    train()  # your training loop\n"
        + "except " + error + ":\n" + "    " + memory + "._dump_snapshot(\"oom_snapshot.pickle\")\n" + "    raise\n"
        + "finally:\n" + "    " + memory + "._record_memory_history(enabled=None)  # stop recording\n");
    raw("</code></pre>\n");
    element("p",
        "max_entries bounds the ring buffer: each entry costs a few hundred bytes of host memory, so 100000 is "
        "cheap; raise it when the report says the trace was truncated. With several GPUs, dump one file per "
        "rank (for example oom_snapshot_rank0.pickle) and open the failing rank's file here together with its "
        "log and the output of print("
            + device + ".memory_summary()).",
        "note");
    endSection();
}

} // namespace oomlens::report
