#include "core/presentation/labels.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <set>

namespace oomlens::report::sections {

// What was read (and what not), and the versions of PyTorch, driver and allocator the inputs name.
void inputs(HtmlWriter& html, const ReportContext& context)
{
    if (context.planOnly)
        return;
    html.beginSection("inputs", "Inputs and versions");
    html.raw("<table>\n<tr><th>input</th><th>kind</th><th>status</th></tr>\n");
    for (const CaseInput& input : context.input.inputs) {
        html.raw("<tr>");
        html.raw("<td><code>");
        html.text(input.path);
        html.raw("</code></td>");
        html.element("td", inputKindLabel(input.kind));
        if (input.error) {
            html.raw("<td><span class=\"badge error\">not read</span> ");
            html.text(*input.error);
            html.raw("</td>");
        } else {
            html.raw("<td><span class=\"badge ok\">read</span></td>");
        }
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");

    html.raw("<table>\n");
    std::set<std::string> versions;
    for (const OomMessage& message : context.input.text.oomMessages) {
        if (!message.torchVersionHint.empty())
            versions.insert(message.torchVersionHint + " (from the OOM message wording)");
    }
    for (const auto& snapshot : context.input.snapshots) {
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
    html.keyValueRow("PyTorch", joined.empty() ? "unknown" : joined);

    for (const NvidiaSmiTable& table : context.input.text.nvidiaSmi) {
        for (const NvidiaSmiGpu& gpu : table.gpus) {
            std::string description = gpu.name;
            if (gpu.totalBytes)
                description += ", " + formatBytes(*gpu.totalBytes);
            if (gpu.usedBytes)
                description += ", " + formatBytes(*gpu.usedBytes) + " in use";
            html.keyValueRow("GPU " + std::to_string(gpu.index), description);
        }
        if (!table.driverVersion.empty())
            html.keyValueRow("NVIDIA driver", table.driverVersion);
        if (!table.cudaVersion.empty())
            html.keyValueRow("CUDA (driver)", table.cudaVersion);
    }
    for (const OomMessage& message : context.input.text.oomMessages) {
        if (message.totalBytes) {
            std::string device
                = backendText(message.backend) + (message.device ? " device " + std::to_string(*message.device) : "");
            html.keyValueRow(
                "GPU capacity", formatBytes(*message.totalBytes) + " (" + device + ", from the OOM message)");
            break;
        }
    }
    for (const AllocConfSetting& setting : context.input.text.allocConfs)
        html.keyValueRow(
            "Allocator settings", setting.raw + (setting.source.empty() ? "" : " (" + setting.source + ")"));
    for (const auto& snapshot : context.input.snapshots) {
        if (snapshot->allocatorSettings) {
            const AllocatorSettings& settings = *snapshot->allocatorSettings;
            std::string description = settings.allocConf.empty() ? "PYTORCH_CUDA_ALLOC_CONF unset" : settings.allocConf;
            description += settings.expandableSegments ? "; expandable segments on" : "; expandable segments off";
            if (settings.maxSplitSize >= 0)
                description += "; max split size " + formatBytes(static_cast<uint64_t>(settings.maxSplitSize));
            html.keyValueRow("Allocator settings (snapshot)", description);
        }
        std::string container = snapshot->container;
        if (snapshot->pickleProtocol > 0)
            container += ", pickle protocol " + std::to_string(snapshot->pickleProtocol);
        if (!container.empty())
            html.keyValueRow("Snapshot container", container);
    }
    html.raw("</table>\n");
    html.endSection();
}

} // namespace oomlens::report::sections
