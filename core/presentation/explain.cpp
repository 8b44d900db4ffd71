#include "core/presentation/explain.h"

#include "core/diagnosis/oomfacts.h"
#include "core/presentation/labels.h"
#include "core/runtimewords.h"
#include "core/units.h"

#include <cmath>

namespace oomlens {

namespace {

std::string percentOf(uint64_t part, uint64_t whole)
{
    if (whole == 0)
        return "";
    return " ("
        + std::to_string(static_cast<int>(std::lround(100.0 * static_cast<double>(part) / static_cast<double>(whole))))
        + "%)";
}

std::string deviceLabel(const OomMessage& message)
{
    std::string backend = message.backend == Backend::None ? "GPU" : backendText(message.backend);
    for (char& c : backend)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (message.backend == Backend::Mps)
        return "MPS";
    return backend + (message.device ? " device " + std::to_string(*message.device) : std::string());
}

void explainNumbers(const OomFacts& f, std::vector<std::string>& lines)
{
    if (f.reserved && f.allocated) {
        std::string line = "PyTorch holds " + formatBytes(*f.reserved) + " on the card";
        if (f.reservedUnallocated && *f.reserved > 0)
            line += ": " + formatBytes(*f.allocated) + " in live tensors and " + formatBytes(*f.reservedUnallocated)
                + " cached but unused";
        lines.push_back(line + ".");
    } else if (f.allocated) {
        lines.push_back("PyTorch has " + formatBytes(*f.allocated) + " in live tensors.");
    }
    if (f.total) {
        std::string line = "The card has " + formatBytes(*f.total);
        if (f.free)
            line += "; " + formatBytes(*f.free) + " of it was free" + percentOf(*f.free, *f.total);
        lines.push_back(line + ".");
    }
    if (f.allowed && f.total)
        lines.push_back("A per-process limit allows this process only " + formatBytes(*f.allowed)
            + percentOf(*f.allowed, *f.total) + " of the card.");
    if (f.otherProcessBytes > 0) {
        std::string who = "Other processes hold ";
        if (f.otherPids.size() == 1)
            who = "Another process (PID " + std::to_string(f.otherPids.front()) + ") holds ";
        lines.push_back(who + formatBytes(f.otherProcessBytes)
            + (f.total ? percentOf(f.otherProcessBytes, *f.total) : std::string()) + ".");
    }
    if (f.selfProcessBytes) {
        std::string line = "This process uses " + formatBytes(*f.selfProcessBytes) + " in all";
        if (f.selfNonPyTorchBytes)
            line += "; " + formatBytes(*f.selfNonPyTorchBytes) + " of it is outside PyTorch's cache ("
                + outsideCacheHolders(f.backend) + ")";
        lines.push_back(line + ".");
    } else if (f.mpsOtherBytes) {
        lines.push_back("Other allocations in this process (outside the MPS allocator) take "
            + formatBytes(*f.mpsOtherBytes) + ".");
    }
    // A few MiB unaccounted for is rounding in the printed figures; only a real amount is worth a line.
    if (const auto unattributed = f.unattributedOutsideBytes(); unattributed && f.total && !f.mpsOtherBytes
        && (*unattributed > 256 * MiB || static_cast<double>(*unattributed) > 0.02 * static_cast<double>(*f.total)))
        lines.push_back(formatBytes(*unattributed) + percentOf(*unattributed, *f.total)
            + " of the card is used outside PyTorch's cache and by no process the message names. A "
            + std::string(runtimeWords(f.backend).context)
            + " takes 0.3-1 GiB; much more than that usually means another process is on the card.");
    if (f.garbageProcessNumbers)
        lines.push_back("A process figure in the message is impossible (NVML's \"not available\" value, 2^64 bytes) "
                        "and is ignored.");
    if (f.inconsistent)
        lines.push_back(
            "The numbers do not add up (more in use than the card holds): unified memory or WSL reports them loosely.");

    if (f.request) {
        const uint64_t request = *f.request;
        if (f.free && *f.free >= request)
            lines.push_back("The card reported " + formatBytes(*f.free) + " free, more than the " + formatBytes(request)
                + " requested: the allocation was refused by a limit, not by the card, or memory was released after "
                  "the failure.");
        else if (f.free && f.reservedUnallocated) {
            const uint64_t room = *f.free + *f.reservedUnallocated;
            if (room >= request)
                lines.push_back("Free plus cached-but-unused memory (" + formatBytes(room) + ") would cover the "
                    + formatBytes(request) + " request, but not in one piece.");
            else
                lines.push_back("The " + formatBytes(request) + " request was " + formatBytes(request - room)
                    + " more than free plus cached-but-unused memory (" + formatBytes(room) + ").");
        }
    }
}

} // namespace

std::vector<std::string> explainOomMessage(const OomMessage& message)
{
    std::vector<std::string> lines;
    const OomFacts f = oomFacts(message);
    if (f.probable) {
        lines.push_back("A near-OOM error (" + message.wordingName()
            + "): a library failed to get memory, so the card was probably full, but the message has no allocator "
              "numbers.");
    }
    if (f.request)
        lines.push_back(deviceLabel(message) + ": tried to allocate " + formatBytes(*f.request)
            + (message.backend == Backend::Cuda || message.backend == Backend::Hip
                    ? " (the allocator's rounded request)."
                    : "."));
    else if (!f.probable)
        lines.push_back(deviceLabel(message) + ": out of memory; the message gives no request size.");
    explainNumbers(f, lines);
    if (message.privatePoolsBytes && *message.privatePoolsBytes > 0)
        lines.push_back(formatBytes(*message.privatePoolsBytes)
            + " is cached free in private pools (CUDA graphs, MemPools): only their owner can use it.");
    if (f.asyncAllocator)
        lines.push_back(
            "The cudaMallocAsync backend is in use: the driver pools memory, so PyTorch's cache figures do not apply.");
    if (f.phase != Phase::Unknown) {
        std::string line = "It failed in the " + phaseInSentence(f.phase) + " phase";
        if (!f.phaseEvidence.empty())
            line += " (" + f.phaseEvidence + ")";
        lines.push_back(line + ".");
    }
    if (!message.torchVersionHint.empty())
        lines.push_back("The wording dates it to PyTorch " + message.torchVersionHint + ".");
    if (message.truncated)
        lines.push_back("The message is cut off; numbers after the cut are missing.");
    for (const auto& note : message.notes)
        lines.push_back(note);
    return lines;
}

std::vector<std::string> explainSummary(const MemorySummary& summary)
{
    std::vector<std::string> lines;
    std::string head = "memory_summary of device " + std::to_string(summary.device);
    if (!summary.unitEra.empty())
        head += summary.unitEra == "KB/MB" ? " (KB/MB units: PyTorch 1.13 or older)"
                                           : " (KiB/MiB units: PyTorch 2.0 or newer)";
    if (summary.ooms || summary.allocRetries) {
        head += ": ";
        if (summary.ooms)
            head += std::to_string(*summary.ooms) + " OOMs";
        if (summary.ooms && summary.allocRetries)
            head += ", ";
        if (summary.allocRetries)
            head += std::to_string(*summary.allocRetries) + " cudaMalloc retries";
    }
    lines.push_back(head + ".");
    if (summary.allZero) {
        lines.push_back("Its counters are zero: the cudaMallocAsync backend does not keep them.");
        return lines;
    }
    const auto row = [&](const char* key) -> const SummaryRow* {
        const auto it = summary.rows.find(key);
        return it == summary.rows.end() ? nullptr : &it->second;
    };
    const SummaryRow* allocated = row("allocated_memory");
    const SummaryRow* reserved = row("gpu_reserved_memory");
    const SummaryRow* stuck = row("non_releasable_memory");
    if (allocated && allocated->current && allocated->peak)
        lines.push_back("Live tensors: " + formatBytes(*allocated->current) + " now, " + formatBytes(*allocated->peak)
            + " at the peak.");
    if (reserved && reserved->current && reserved->peak)
        lines.push_back("PyTorch's cache: " + formatBytes(*reserved->current) + " reserved now, "
            + formatBytes(*reserved->peak) + " at the peak.");
    if (allocated && allocated->current && reserved && reserved->current && *reserved->current >= *allocated->current)
        lines.push_back(formatBytes(*reserved->current - *allocated->current)
            + " of the cache is reserved but unallocated"
            + percentOf(*reserved->current - *allocated->current, *reserved->current) + ".");
    if (stuck && stuck->current && reserved && reserved->current && *stuck->current > 0)
        lines.push_back(formatBytes(*stuck->current) + " is non-releasable"
            + percentOf(*stuck->current, *reserved->current)
            + ": free space inside partly used blocks, which empty_cache() cannot return.");
    const SummaryRow* oversize = row("oversize_allocations");
    if (oversize && oversize->current && *oversize->current > 0)
        lines.push_back(
            std::to_string(*oversize->current) + " oversize allocations (above max_split_size_mb) are live.");
    if (summary.truncated)
        lines.push_back("The table is cut off; rows after the cut are missing.");
    return lines;
}

std::vector<std::string> explainNvidiaSmi(const NvidiaSmiTable& table)
{
    std::vector<std::string> lines;
    for (const auto& gpu : table.gpus) {
        std::string line
            = "nvidia-smi: GPU " + std::to_string(gpu.index) + (gpu.name.empty() ? "" : " (" + gpu.name + ")");
        if (gpu.usedBytes && gpu.totalBytes)
            line += " uses " + formatBytes(*gpu.usedBytes) + " of " + formatBytes(*gpu.totalBytes)
                + percentOf(*gpu.usedBytes, *gpu.totalBytes);
        lines.push_back(line + ".");
    }
    for (const auto& process : table.processes) {
        std::string line = "GPU " + std::to_string(process.gpu) + ": process "
            + (process.pid ? std::to_string(*process.pid) : std::string("?"));
        if (!process.name.empty())
            line += " (" + process.name + ")";
        line += process.bytes ? " holds " + formatBytes(*process.bytes) : std::string(" (memory not reported)");
        lines.push_back(line + ".");
    }
    return lines;
}

std::vector<std::string> explainFindings(const TextFindings& findings)
{
    std::vector<std::string> lines;
    const auto append
        = [&lines](std::vector<std::string> more) { lines.insert(lines.end(), more.begin(), more.end()); };
    for (const auto& message : findings.oomMessages)
        append(explainOomMessage(message));
    for (const auto& summary : findings.summaries)
        append(explainSummary(summary));
    for (const auto& table : findings.nvidiaSmi)
        append(explainNvidiaSmi(table));
    for (const auto& setting : findings.allocConfs) {
        std::string line = "Allocator setting \"" + setting.raw + "\" (" + setting.source + ")";
        if (setting.expandableSegments())
            line += ": expandable segments are on";
        else if (setting.backend() == AllocatorBackend::CudaMallocAsync)
            line += ": the cudaMallocAsync backend is in use";
        lines.push_back(line + ".");
    }
    return lines;
}

} // namespace oomlens
