#include "core/report/reportsections.h"

namespace oomlens::report::sections {

// What the snapshots lack (ReportContext::captureAdviceReason) and how to record one that has it.
void captureAdvice(HtmlWriter& html, const ReportContext& context)
{
    const std::string& reason = context.captureAdviceReason;
    if (reason.empty())
        return;
    html.beginSection("capture", "How to capture a better snapshot");
    html.element("p", reason);
    html.raw("\n<pre><code>");
    html.text("import torch\n\n"
              "# Start before the model and optimizer are built, so parameters and optimizer state get stacks too.\n"
              "torch.cuda.memory._record_memory_history(max_entries=100000)\n\n"
              "try:\n"
              "    train()  # your training loop\n"
              "except torch.cuda.OutOfMemoryError:\n"
              "    torch.cuda.memory._dump_snapshot(\"oom_snapshot.pickle\")\n"
              "    raise\n"
              "finally:\n"
              "    torch.cuda.memory._record_memory_history(enabled=None)  # stop recording\n");
    html.raw("</code></pre>\n");
    html.element("p",
        "max_entries bounds the ring buffer: each entry costs a few hundred bytes of host memory, so 100000 is "
        "cheap; raise it when the report says the trace was truncated. With several GPUs, dump one file per "
        "rank (for example oom_snapshot_rank0.pickle) and open the failing rank's file here together with its "
        "log and the output of print(torch.cuda.memory_summary()).",
        "note");
    html.endSection();
}

} // namespace oomlens::report::sections
