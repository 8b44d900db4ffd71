#include "core/presentation/labels.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <set>

namespace oomlens::report::sections {

namespace {

// Every input with its kind, and why one was not read.
void inputTable(HtmlWriter& html, const Case& input)
{
    html.raw("<table>\n<tr><th>input</th><th>kind</th><th>status</th></tr>\n");
    for (const CaseInput& file : input.inputs) {
        html.raw("<tr>");
        html.raw("<td><code>");
        html.text(file.path);
        html.raw("</code></td>");
        html.element("td", inputKindLabel(file.kind));
        if (file.error) {
            html.raw("<td><span class=\"badge error\">not read</span> ");
            html.text(*file.error);
            html.raw("</td>");
        } else {
            html.raw("<td><span class=\"badge ok\">read</span></td>");
        }
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

std::string_view snapshotEraVersion(Snapshot::Era era)
{
    switch (era) {
    case Snapshot::Era::SegmentList:
        return "1.13 or older (snapshot is a bare segment list)";
    case Snapshot::Era::BlockHistory:
        return "1.13–2.0 (snapshot blocks carry history)";
    case Snapshot::Era::Traces:
        return "2.0 or newer (snapshot has device traces)";
    }
    return {};
}

// The PyTorch versions the inputs hint at: an OOM message's wording, a snapshot's layout.
std::string pytorchVersions(const Case& input)
{
    std::set<std::string> versions;
    for (const OomMessage& message : input.text.oomMessages) {
        if (!message.torchVersionHint.empty())
            versions.insert(message.torchVersionHint + " (from the OOM message wording)");
    }
    for (const auto& snapshot : input.snapshots) {
        const std::string_view version = snapshotEraVersion(snapshot->era);
        if (!version.empty())
            versions.insert(std::string(version));
    }
    std::string joined;
    for (const std::string& version : versions)
        joined += (joined.empty() ? "" : "; ") + version;
    return joined.empty() ? "unknown" : joined;
}

// The cards, driver and CUDA that nvidia-smi printed, and the capacity the first OOM message gives.
void gpuRows(HtmlWriter& html, const Case& input)
{
    for (const NvidiaSmiTable& table : input.text.nvidiaSmi) {
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
    for (const OomMessage& message : input.text.oomMessages) {
        if (message.totalBytes) {
            std::string device
                = backendText(message.backend) + (message.device ? " device " + std::to_string(*message.device) : "");
            html.keyValueRow(
                "GPU capacity", formatBytes(*message.totalBytes) + " (" + device + ", from the OOM message)");
            break;
        }
    }
}

std::string allocatorSettingsText(const AllocatorSettings& settings)
{
    std::string description = settings.allocConf.empty() ? "PYTORCH_CUDA_ALLOC_CONF unset" : settings.allocConf;
    description += settings.expandableSegments ? "; expandable segments on" : "; expandable segments off";
    if (settings.maxSplitSize >= 0)
        description += "; max split size " + formatBytes(static_cast<uint64_t>(settings.maxSplitSize));
    return description;
}

// The allocator's settings as the logs and the snapshots record them, and each snapshot's container.
void allocatorRows(HtmlWriter& html, const Case& input)
{
    for (const AllocConfSetting& setting : input.text.allocConfs)
        html.keyValueRow(
            "Allocator settings", setting.raw + (setting.source.empty() ? "" : " (" + setting.source + ")"));
    for (const auto& snapshot : input.snapshots) {
        if (snapshot->allocatorSettings)
            html.keyValueRow("Allocator settings (snapshot)", allocatorSettingsText(*snapshot->allocatorSettings));
        std::string container = snapshot->container;
        if (snapshot->pickleProtocol > 0)
            container += ", pickle protocol " + std::to_string(snapshot->pickleProtocol);
        if (!container.empty())
            html.keyValueRow("Snapshot container", container);
    }
}

} // namespace

// What was read (and what not), and the versions of PyTorch, driver and allocator the inputs name.
void inputs(HtmlWriter& html, const ReportContext& context)
{
    if (context.planOnly)
        return;
    html.beginSection("inputs", "Inputs and versions");
    inputTable(html, context.input);
    html.raw("<table>\n");
    html.keyValueRow("PyTorch", pytorchVersions(context.input));
    gpuRows(html, context.input);
    allocatorRows(html, context.input);
    html.raw("</table>\n");
    html.endSection();
}

} // namespace oomlens::report::sections
