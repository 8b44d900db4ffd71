#include "core/report/reportbuilder.h"

#include "core/explain.h"
#include "core/units.h"

#include <array>

namespace oomlens::report {

namespace {

struct ExplainedNumber
{
    std::string label;
    std::string value;
    std::string meaning;
};

std::vector<ExplainedNumber> explainOom(const OomMessage& m)
{
    std::vector<ExplainedNumber> rows;
    const auto add = [&rows](std::string label, const std::optional<uint64_t>& bytes, std::string meaning) {
        if (bytes)
            rows.push_back({ std::move(label), formatBytes(*bytes), std::move(meaning) });
    };
    add("Tried to allocate", m.requestedBytes,
        "The one request that failed — not the total the program needs. The allocator rounds it up to its block "
        "size before asking the driver.");
    add("Total capacity", m.totalBytes,
        "The card's memory as the driver reports it, a little under the size on the box.");
    add("Free", m.freeBytes,
        "What the driver had left on the whole device at that moment, outside PyTorch's cache and every "
        "process.");
    add("Allocated by PyTorch", m.allocatedBytes, "Memory held by live tensors of this process.");
    add("Reserved by PyTorch", m.reservedBytes,
        "Memory PyTorch's caching allocator holds from the driver: the allocated tensors plus cached free "
        "blocks.");
    add("Reserved but unallocated", m.reservedUnallocatedBytes,
        "Cached free blocks. They could not serve this request: they are in pieces smaller than it, or in the "
        "other pool or stream.");
    add("Allowed (memory fraction)", m.allowedBytes,
        "The per-process limit set by torch.cuda.set_per_process_memory_fraction(); the process failed at this "
        "cap, not at the card's capacity.");
    add("Private pools", m.privatePoolsBytes,
        "Memory kept in private pools (CUDA graphs); other allocations cannot use it.");
    add("Other allocations", m.otherAllocationsBytes, "Memory the MPS backend counts outside PyTorch's tensors.");
    for (const ProcessUsage& process : m.processes) {
        std::string label = process.self ? "This process" : "Process";
        if (process.pid)
            label += " " + std::to_string(*process.pid);
        rows.push_back({ label, process.bytes ? formatBytes(*process.bytes) : "not reported",
            process.self ? "Everything this process holds on the card: PyTorch's cache plus the CUDA "
                           "context and library workspaces."
                         : "Another process on the same card; its memory is not available to this one." });
    }
    if (m.totalBytes && m.freeBytes && m.reservedBytes && *m.totalBytes >= *m.freeBytes + *m.reservedBytes) {
        rows.push_back({ "Used outside PyTorch's cache", formatBytes(*m.totalBytes - *m.freeBytes - *m.reservedBytes),
            "total − free − reserved: the CUDA context, cuBLAS/cuDNN/NCCL workspaces, and any other "
            "process on the card." });
    }
    return rows;
}

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
        std::string heading = message.exception.empty() ? message.backend + " out of memory" : message.exception;
        if (message.device)
            heading += " on device " + std::to_string(*message.device);
        element("h3", heading);
        raw("\n<pre><code>");
        text(message.text);
        raw("</code></pre>\n");
        std::string facts = "Backend " + message.backend;
        if (!message.templateId.empty())
            facts += ", message template " + message.templateId;
        element("p", facts + ".", "note");
        raw("\n");
        writeList(explainOomMessage(message));
        const std::vector<ExplainedNumber> rows = explainOom(message);
        if (!rows.empty()) {
            raw("<details class=\"numbers\" open><summary>Every number in the message</summary>\n<table>\n"
                "<tr><th>number</th><th class=\"num\">value</th><th>what it means</th></tr>\n");
            for (const ExplainedNumber& row : rows) {
                raw("<tr>");
                element("td", row.label);
                element("td", row.value, "num");
                element("td", row.meaning);
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
    raw("\n<pre><code>");
    text("import torch\n\n"
         "# Start before the model and optimizer are built, so parameters and optimizer state get stacks too.\n"
         "torch.cuda.memory._record_memory_history(max_entries=100000)\n\n"
         "try:\n"
         "    train()  # your training loop\n"
         "except torch.cuda.OutOfMemoryError:\n"
         "    torch.cuda.memory._dump_snapshot(\"oom_snapshot.pickle\")\n"
         "    raise\n"
         "finally:\n"
         "    torch.cuda.memory._record_memory_history(enabled=None)  # stop recording\n");
    raw("</code></pre>\n");
    element("p",
        "max_entries bounds the ring buffer: each entry costs a few hundred bytes of host memory, so 100000 is "
        "cheap; raise it when the report says the trace was truncated. With several GPUs, dump one file per "
        "rank (for example oom_snapshot_rank0.pickle) and open the failing rank's file here together with its "
        "log and the output of print(torch.cuda.memory_summary()).",
        "note");
    endSection();
}

} // namespace oomlens::report
