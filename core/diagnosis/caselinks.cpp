#include "core/diagnosis/caselinks.h"

#include "core/units.h"

#include <cmath>

namespace oomlens {

namespace {

// The message prints the cudaMalloc size (2 MiB / 20 MiB buckets, 2 MiB rounding); the oom
// event holds the block-rounded request. Either may match the other's printed form.
uint64_t segmentSize(uint64_t request)
{
    if (request <= MiB)
        return 2 * MiB;
    if (request <= 10 * MiB)
        return 20 * MiB;
    return (request + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

bool sameSize(uint64_t printed, uint64_t exact)
{
    return formatBytes(printed) == formatBytes(exact) || formatBytes(printed) == formatBytes(segmentSize(exact));
}

std::string snapshotName(int snapshotIndex)
{
    return "snapshot " + std::to_string(snapshotIndex + 1);
}

} // namespace

MessageLink linkMessage(const TextFindings& text, const DeviceAnalysis& device, int snapshotIndex)
{
    MessageLink link;
    if (device.ooms.empty() || text.oomMessages.empty())
        return link;
    const OomAnalysis& oom = device.ooms.back();
    std::optional<size_t> sameDevice;
    for (size_t i = text.oomMessages.size(); i-- > 0;) {
        const OomMessage& message = text.oomMessages[i];
        if (message.device.value_or(0) != device.device)
            continue;
        if (!sameDevice)
            sameDevice = i;
        if (message.requestedBytes && sameSize(*message.requestedBytes, oom.requestedBytes)) {
            link.messageIndex = i;
            std::string note = "The OOM message"
                + (message.sourceLine > 0 ? " at line " + std::to_string(message.sourceLine) : std::string()) + " is "
                + snapshotName(snapshotIndex) + "'s oom event " + std::to_string(oom.eventIndex) + ": device "
                + std::to_string(device.device) + ", " + formatBytes(*message.requestedBytes) + " requested";
            if (message.freeBytes && formatBytes(*message.freeBytes) != formatBytes(oom.deviceFreeBytes))
                note += "; free differs (" + formatBytes(*message.freeBytes) + " in the message, "
                    + formatBytes(oom.deviceFreeBytes)
                    + " in the snapshot: the allocator released cached blocks in between)";
            link.notes.push_back(note + ".");
            return link;
        }
    }
    if (sameDevice) {
        const OomMessage& message = text.oomMessages[*sameDevice];
        link.notes.push_back("The OOM message on device " + std::to_string(device.device) + " asks for "
            + (message.requestedBytes ? formatBytes(*message.requestedBytes) : std::string("an unknown size"))
            + ", but " + snapshotName(snapshotIndex) + "'s last oom event asks for " + formatBytes(oom.requestedBytes)
            + ": they may come from different runs or different moments.");
        return link;
    }
    link.notes.push_back("The OOM messages name device " + std::to_string(text.oomMessages.back().device.value_or(0))
        + ", " + snapshotName(snapshotIndex) + " failed on device " + std::to_string(device.device)
        + ": another rank or another run; they are diagnosed separately.");
    return link;
}

std::vector<std::string> compareSummary(const MemorySummary& summary, const DeviceAnalysis& device, int snapshotIndex)
{
    std::vector<std::string> notes;
    if (summary.device != device.device) {
        notes.push_back("The memory_summary is for device " + std::to_string(summary.device) + ", "
            + snapshotName(snapshotIndex) + " is for device " + std::to_string(device.device) + ".");
        return notes;
    }
    if (summary.allZero)
        return notes;
    if (summary.ooms && *summary.ooms > 0 && device.ooms.empty())
        notes.push_back("The memory_summary counts " + std::to_string(*summary.ooms) + " OOMs, but "
            + snapshotName(snapshotIndex)
            + " has no oom event: it was dumped before the failure, or comes from another run.");
    const auto it = summary.rows.find("allocated_memory");
    if (it != summary.rows.end() && it->second.peak && device.peakAllocatedBytes > 0) {
        const double summaryPeak = static_cast<double>(*it->second.peak);
        const double snapshotPeak = static_cast<double>(device.peakAllocatedBytes);
        // The summary floors to whole units and counts block sizes; the snapshot counts requests.
        if (std::fabs(summaryPeak - snapshotPeak) > 0.1 * std::max(summaryPeak, snapshotPeak) + 2.0 * MiB)
            notes.push_back("Peak allocated differs: " + formatBytes(*it->second.peak) + " in the memory_summary, "
                + formatBytes(device.peakAllocatedBytes) + " in " + snapshotName(snapshotIndex)
                + " (the summary covers the whole process lifetime, the trace may start later).");
        else
            notes.push_back("The memory_summary's peak allocated (" + formatBytes(*it->second.peak) + ") agrees with "
                + snapshotName(snapshotIndex) + "'s (" + formatBytes(device.peakAllocatedBytes) + ").");
    }
    return notes;
}

} // namespace oomlens
