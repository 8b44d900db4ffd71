#include "core/presentation/messagenumbers.h"

#include "core/diagnosis/oomfacts.h"
#include "core/runtimewords.h"
#include "core/units.h"

namespace oomlens {

std::vector<ExplainedNumber> explainMessageNumbers(const OomMessage& m)
{
    std::vector<ExplainedNumber> rows;
    const auto printed
        = [&rows](const char* label, const std::optional<uint64_t>& bytes, const char* meaning, const char* detail) {
              if (bytes)
                  rows.push_back({ ExplainedNumber::Kind::Printed, label, formatBytes(*bytes), meaning, detail });
          };
    printed("Requested", m.requestedBytes, "the allocation that failed",
        "The one request that failed — not the total the program needs. The allocator rounds it up to its block "
        "size before asking the driver.");
    printed("Card capacity", m.totalBytes, "total memory of the GPU",
        "The card's memory as the driver reports it, a little under the size on the box.");
    printed("Free on the card", m.freeBytes, "what the driver had left, for every process",
        "What the driver had left on the whole device at that moment, outside PyTorch's cache and every process.");
    printed("Allocated by PyTorch", m.allocatedBytes, "held by live tensors of this process",
        "Memory held by live tensors of this process.");
    printed("Reserved by PyTorch", m.reservedBytes, "taken from the card by the caching allocator",
        "Memory PyTorch's caching allocator holds from the driver: the allocated tensors plus cached free blocks.");
    printed("Reserved but unallocated", m.reservedUnallocatedBytes, "cached free blocks; large means fragmentation",
        "Cached free blocks. They could not serve this request: they are in pieces smaller than it, or in the other "
        "pool or stream.");
    printed("Allowed", m.allowedBytes, "a per-process cap (set_per_process_memory_fraction)",
        "The per-process limit set by torch.cuda.set_per_process_memory_fraction(); the process failed at this cap, "
        "not at the card's capacity.");
    printed("Private pools", m.privatePoolsBytes, "free blocks cached by private pools (CUDA graphs, MemPools)",
        "Despite the message's wording, PyTorch counts the free blocks its private pools cache: reserved for their "
        "own graph capture or MemPool, so other allocations cannot use them.");
    printed("Other allocations", m.otherAllocationsBytes, "MPS memory outside PyTorch's allocator",
        "Memory the MPS backend counts outside PyTorch's tensors.");

    for (const ProcessUsage& process : m.processes) {
        std::string label = process.self ? "This process" : "Process";
        if (process.pid)
            label += " " + std::to_string(*process.pid);
        rows.push_back({ ExplainedNumber::Kind::Process, std::move(label),
            process.bytes ? formatBytes(*process.bytes) : "not reported",
            process.self ? "everything this process holds on the card" : "another process on the same card",
            process.self ? "Everything this process holds on the card: PyTorch's cache plus the "
                    + std::string(runtimeWords(m.backend).context) + " and library workspaces."
                         : "Another process on the same card; its memory is not available to this one." });
    }

    // MPS counts its "other allocations" as the outside part; that row is already printed above.
    const OomFacts facts = oomFacts(m);
    if (facts.outsideBytes && m.backend != Backend::Mps)
        rows.push_back({ ExplainedNumber::Kind::Derived, "Used outside PyTorch's cache",
            formatBytes(*facts.outsideBytes), "total − free − reserved",
            "total − free − reserved: " + outsideCacheHolders(m.backend) + ", and any other process on the card." });
    return rows;
}

} // namespace oomlens
