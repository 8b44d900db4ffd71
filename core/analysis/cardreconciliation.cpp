#include "core/analysis/cardreconciliation.h"

#include "core/analysis/allocatorstate.h"
#include "core/analysis/privatepools.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/oomfacts.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>

namespace oomlens {

namespace {

constexpr const char* derived = "derived";

// A runtime context (CUDA's with lazy module loading) plus the math kernels loaded on first use:
// more than this outside the allocator in one process points at collectives or another library.
constexpr uint64_t usualProcessOverhead = 2 * GiB;

struct Sources
{
    std::string total, free, allocator, process;
};

const OomMessage* chosenMessage(const Case& input)
{
    // The message that prints the card's figures; a near-OOM error without them says nothing here.
    for (const OomMessage& message : input.text.oomMessages) {
        if (message.totalBytes && message.freeBytes)
            return &message;
    }
    return input.text.oomMessages.empty() ? nullptr : &input.text.oomMessages.front();
}

const SnapshotAnalysis* chosenSnapshot(const CaseAnalysis& analysis, std::optional<int> device)
{
    const SnapshotAnalysis* first = nullptr;
    for (const SnapshotAnalysis& snapshot : analysis.snapshots) {
        if (!snapshot.snapshot || !snapshot.primary())
            continue;
        if (!first)
            first = &snapshot;
        if (device && snapshot.primaryDevice == *device)
            return &snapshot;
    }
    return first;
}

const NvidiaSmiGpu* smiGpu(const Case& input, int device)
{
    for (const NvidiaSmiTable& table : input.text.nvidiaSmi) {
        for (const NvidiaSmiGpu& gpu : table.gpus) {
            if (gpu.index == device)
                return &gpu;
        }
    }
    return nullptr;
}

const CaptureSidecar* chosenSidecar(const Case& input)
{
    for (const CaptureSidecar& sidecar : input.sidecars) {
        if (sidecar.totalMemoryBytes)
            return &sidecar;
    }
    return nullptr;
}

// The message as the other inputs complete it: the card from nvidia-smi or the sidecar, the
// free bytes from the snapshot's oom event, the allocator from the snapshot, the processes from
// nvidia-smi. What the message printed itself always wins.
OomMessage completedMessage(const Case& input, const CaseAnalysis& analysis, Sources& sources)
{
    const OomMessage* printed = chosenMessage(input);
    OomMessage message = printed ? *printed : OomMessage {};
    const SnapshotAnalysis* snapshot = chosenSnapshot(analysis, printed ? printed->device : std::nullopt);
    if (!message.device)
        message.device = snapshot ? snapshot->primaryDevice : 0;
    if (message.backend == Backend::None)
        message.backend = Backend::Cuda;
    const int device = *message.device;
    const NvidiaSmiGpu* gpu = smiGpu(input, device);
    const CaptureSidecar* sidecar = chosenSidecar(input);
    const DeviceAnalysis* deviceAnalysis = snapshot ? snapshot->primary() : nullptr;
    const OomAnalysis* oom = deviceAnalysis && !deviceAnalysis->ooms.empty() ? &deviceAnalysis->ooms.back() : nullptr;

    if (message.totalBytes) {
        sources.total = "OOM message";
    } else if (gpu && gpu->totalBytes) {
        message.totalBytes = gpu->totalBytes;
        sources.total = "nvidia-smi";
    } else if (sidecar) {
        message.totalBytes = sidecar->totalMemoryBytes;
        sources.total = "capture sidecar";
    }

    if (message.freeBytes) {
        sources.free = "OOM message";
    } else if (oom && oom->deviceFreeBytes > 0) {
        message.freeBytes = oom->deviceFreeBytes;
        sources.free = "snapshot's oom event";
    } else if (gpu && gpu->usedBytes && message.totalBytes && *gpu->usedBytes <= *message.totalBytes) {
        message.freeBytes = *message.totalBytes - *gpu->usedBytes;
        sources.free = "nvidia-smi";
    }

    // The snapshot's oom event is the same failure: its request says what the card lacked.
    if (!message.requestedBytes && oom && oom->requestedBytes > 0)
        message.requestedBytes = oom->requestedBytes;

    if (message.reservedBytes || message.allocatedBytes) {
        sources.allocator = "OOM message";
    } else if (oom) {
        message.reservedBytes = oom->reservedBytes;
        message.allocatedBytes = oom->allocatedBytes;
        sources.allocator = "snapshot at the OOM";
    } else if (snapshot) {
        uint64_t reserved = 0, allocated = 0;
        for (const Segment& segment : snapshot->snapshot->segments) {
            if (segment.device != device)
                continue;
            reserved += segment.totalSize;
            allocated += segment.allocatedSize;
        }
        message.reservedBytes = reserved;
        message.allocatedBytes = allocated;
        sources.allocator = "snapshot at the dump";
    }

    if (!message.processes.empty()) {
        sources.process = "OOM message";
        return message;
    }
    // nvidia-smi's processes on this GPU: the only one is this run; among several, OomFacts picks
    // the one holding PyTorch's cache (container PIDs differ from the host's).
    std::vector<ProcessUsage> listed;
    for (const NvidiaSmiTable& table : input.text.nvidiaSmi) {
        for (const GpuProcess& process : table.processes) {
            if (process.gpu == device && process.bytes)
                listed.push_back({ process.pid, process.bytes, false });
        }
    }
    if (listed.size() == 1)
        listed.front().self = true;
    if (!listed.empty()) {
        message.processes = std::move(listed);
        sources.process = "nvidia-smi";
    }
    return message;
}

std::string percentOfCard(uint64_t bytes, uint64_t total)
{
    if (total == 0)
        return {};
    return " (" + std::to_string(static_cast<int>(std::lround(100.0 * double(bytes) / double(total)))) + "%)";
}

// Causes that name memory PyTorch's allocator does not hold: another process, NCCL's buffers, an
// inference engine's pools beside training.
bool outsideAllocatorCause(DiagnosisId id)
{
    return id == DiagnosisId::OtherProcess || id == DiagnosisId::CommunicationBuffers
        || id == DiagnosisId::ColocatedEngine;
}

// The rest of the card explains this case when the verdict is such a cause, or when one of the
// other diagnoses is and freeing that memory is projected to make the run fit.
bool restExplainsCase(const std::vector<Diagnosis>& diagnoses)
{
    for (size_t i = 0; i < diagnoses.size(); ++i) {
        const Diagnosis& diagnosis = diagnoses[i];
        if (!outsideAllocatorCause(diagnosis.id))
            continue;
        const bool fits = !diagnosis.fixes.empty() && diagnosis.fixes.front().fitsAfter.value_or(false);
        if (i == 0 || fits)
            return true;
    }
    return false;
}

// Whether the rest of the card could have made the failed request fit: what it holds beyond a
// runtime's own context and kernels (usualProcessOverhead, which no fix removes) against what the
// request lacked on the card. Within that overhead the rest is the price of using the GPU at all,
// the same in every run, and explaining it would only lengthen the answer; beyond the shortfall it
// changes the fix, since freeing it (another process, collectives' buffers, a library's pool) lets
// the run go on as it is. Without a request to compare, more than the overhead is worth a look.
bool restCoversShortfall(const OomFacts& facts)
{
    if (!facts.outsideBytes || *facts.outsideBytes <= usualProcessOverhead)
        return false;
    const uint64_t beyondRuntime = *facts.outsideBytes - usualProcessOverhead;
    if (!facts.request || !facts.free)
        return true;
    return *facts.request > *facts.free && beyondRuntime >= *facts.request - *facts.free;
}

void addFigure(CardReconciliation& result, CardFigure::View view, std::string key, std::string label,
    std::optional<uint64_t> bytes, std::string source, std::string meaning)
{
    result.figures.push_back({ view, std::move(key), std::move(label), bytes, std::move(source), std::move(meaning) });
}

void addBands(CardReconciliation& result, const OomFacts& facts)
{
    if (!facts.total || !facts.free || !facts.reserved || !facts.allocated || !facts.outsideBytes
        || *facts.allocated > *facts.reserved)
        return;
    const uint64_t outside = *facts.outsideBytes;
    const uint64_t processOutside = std::min(facts.selfNonPyTorchBytes.value_or(0), outside);
    const uint64_t others = std::min(facts.otherProcessBytes, outside - processOutside);
    const uint64_t rest = outside - processOutside - others;
    const auto add = [&](CardBandKind kind, std::string label, uint64_t bytes) {
        if (bytes > 0)
            result.bands.push_back({ kind, std::move(label), bytes });
    };
    add(CardBandKind::Allocated, "Allocated (tensors)", *facts.allocated);
    add(CardBandKind::CachedFree, "Cached, unallocated", *facts.reserved - *facts.allocated);
    add(CardBandKind::ProcessOutsideAllocator, "This process outside PyTorch", processOutside);
    add(CardBandKind::OtherProcesses, "Other processes", others);
    add(CardBandKind::Unattributed,
        facts.selfProcessBytes ? "Not attributed to a listed process" : "Outside PyTorch (context, libraries, others)",
        rest);
    add(CardBandKind::Free, "Free", *facts.free);
}

void addNotes(CardReconciliation& result, const OomFacts& facts, const Case& input)
{
    const RuntimeWords words = runtimeWords(facts.backend);
    if (facts.inconsistent)
        result.notes.push_back("These figures cannot all be true at once (unified memory, WSL or a MIG slice report "
                               "differently): read the table as the inputs' words, not as one moment of one card.");
    if (facts.outsideBytes && facts.total)
        result.notes.push_back(formatBytes(*facts.outsideBytes) + " of the card"
            + percentOfCard(*facts.outsideBytes, *facts.total)
            + " is used outside PyTorch's allocator: the rest of the card, where contexts, libraries' own "
              "buffers and other processes live.");
    if (facts.selfNonPyTorchBytes) {
        if (*facts.selfNonPyTorchBytes > usualProcessOverhead)
            result.notes.push_back("This process holds " + formatBytes(*facts.selfNonPyTorchBytes)
                + " outside PyTorch's cache, more than a " + std::string(words.context)
                + " and library kernels usually take (up to about " + formatBytes(usualProcessOverhead)
                + "): " + std::string(words.collectives)
                + " buffers or another library's own allocations are the likely rest.");
        else
            result.notes.push_back("This process holds " + formatBytes(*facts.selfNonPyTorchBytes)
                + " outside PyTorch's cache: about what a " + std::string(words.context)
                + " and library kernels take.");
    }
    if (facts.otherProcessBytes > 0)
        result.notes.push_back("Other processes hold " + formatBytes(facts.otherProcessBytes)
            + " of this card: memory this run could not have had.");
    if (const auto unattributed = facts.unattributedOutsideBytes();
        unattributed && facts.selfProcessBytes && *unattributed > 256 * MiB)
        result.notes.push_back(formatBytes(*unattributed)
            + " used on the card is in no listed process: a process NVML cannot see (another container, MIG) or "
              "figures taken at different moments.");
    if (!facts.selfProcessBytes)
        result.notes.push_back("No input says how much this process uses as a whole, so its "
            + std::string(words.context)
            + " and libraries cannot be told from other processes: PyTorch 2.2+ messages print \"this process has X "
              "memory in use\", and "
            + std::string(words.processTool) + "'s process table lists it.");
    const NvidiaSmiGpu* gpu = smiGpu(input, facts.device);
    if (gpu && gpu->usedBytes && facts.total && facts.free && *facts.free <= *facts.total) {
        const uint64_t used = *facts.total - *facts.free;
        const uint64_t difference = used > *gpu->usedBytes ? used - *gpu->usedBytes : *gpu->usedBytes - used;
        if (difference > std::max<uint64_t>(256 * MiB, used / 20))
            result.notes.push_back("nvidia-smi shows " + formatBytes(*gpu->usedBytes) + " used, the other figures "
                + formatBytes(used) + ": it was taken at another moment (before the run grew, or after it freed).");
    }
}

// The message prints two decimals of its unit ("79.10 GiB"): allow that, and the block sizes
// the trace can only estimate for allocations freed before the dump.
bool withinRounding(uint64_t message, uint64_t snapshot)
{
    const uint64_t larger = std::max(message, snapshot);
    const uint64_t difference = larger - std::min(message, snapshot);
    return difference <= std::max<uint64_t>(2 * MiB, larger / 100);
}

// The printed message's figures beside the snapshot's at its last oom event, when both exist and
// are of the same device.
void addOomChecks(CardReconciliation& result, const Case& input, const CaseAnalysis& analysis)
{
    const OomMessage* message = chosenMessage(input);
    if (!message)
        return;
    const SnapshotAnalysis* snapshot = chosenSnapshot(analysis, message->device);
    const DeviceAnalysis* device = snapshot ? snapshot->primary() : nullptr;
    if (!device || device->ooms.empty() || (message->device && *message->device != device->device))
        return;
    const OomAnalysis& oom = device->ooms.back();
    result.oomEvent = oom.eventIndex;
    const auto add = [&](std::string key, std::string label, std::optional<uint64_t> printed, uint64_t traced,
                         std::optional<bool> agrees = std::nullopt) {
        if (printed)
            result.oomChecks.push_back({ std::move(key), std::move(label), *printed, traced,
                agrees.value_or(withinRounding(*printed, traced)) });
    };
    // memory_allocated() counts the rounded blocks handed out; a block freed but still in use by
    // another stream no longer counts.
    const AllocatorState state = allocatorStateAt(*snapshot->snapshot, *device, oom.eventIndex);
    uint64_t allocated = 0;
    for (const StateSegment& segment : state.segments) {
        for (const StateBlock& block : segment.blocks)
            allocated += block.pendingFree ? 0 : block.size;
    }
    // The message's "allocated by PyTorch" adds what private pools cache free (the figure it
    // prints as "allocated in private pools"), compared as privatepools.h does: segments released
    // before the dump may hold some of it.
    const PrivatePools pools = privatePools(*snapshot->snapshot, *device, message->privatePoolsBytes);
    const PrivatePoolsAtOom* privateAtOom = pools.atOom ? &*pools.atOom : nullptr;
    const uint64_t privateFree = privateAtOom ? privateAtOom->privateFreeBytes : 0;
    const uint64_t unattributed = privateAtOom ? privateAtOom->unattributedFreeBytes : 0;
    const uint64_t low = allocated + privateFree, high = low + unattributed;
    std::optional<bool> allocatedAgrees;
    if (message->allocatedBytes) {
        const uint64_t printed = *message->allocatedBytes;
        allocatedAgrees
            = withinRounding(printed, low) || withinRounding(printed, high) || (printed >= low && printed <= high);
    }
    add("allocated", "Allocated by PyTorch", message->allocatedBytes, low, allocatedAgrees);
    add("reserved", "Reserved by PyTorch", message->reservedBytes, oom.reservedBytes);
    if (oom.deviceFreeBytes > 0)
        add("device_free", "Free on the card", message->freeBytes, oom.deviceFreeBytes);
    if (message->privatePoolsBytes && privateAtOom)
        add("private_pools", "Cached in private pools (CUDA graphs, MemPools)", message->privatePoolsBytes, privateFree,
            privateAtOom->agrees);
    for (const OomFigureCheck& check : result.oomChecks) {
        if (!check.agrees)
            result.notes.push_back("The OOM message says " + formatBytes(check.messageBytes) + " for \"" + check.label
                + "\", the snapshot " + formatBytes(check.snapshotBytes) + " at its oom event (#"
                + std::to_string(oom.eventIndex)
                + "): more apart than the message's rounding, so they are not the same moment (the snapshot is of "
                  "another failure, or was dumped after memory was freed). The table shows the message's figure.");
    }
}

} // namespace

const CardFigure* CardReconciliation::figure(std::string_view key) const
{
    for (const CardFigure& figure : figures) {
        if (figure.key == key)
            return &figure;
    }
    return nullptr;
}

CardReconciliation reconcileCard(const Case& input, const CaseAnalysis& analysis)
{
    CardReconciliation result;
    Sources sources;
    const OomMessage message = completedMessage(input, analysis, sources);
    const OomFacts facts = oomFacts(message);
    if (!facts.total || !facts.free || message.backend == Backend::Mps || message.backend == Backend::Xla
        || message.backend == Backend::Tf)
        return result; // no card to reconcile (or one whose figures mean something else)
    result.device = facts.device;
    const std::string allocatorSource = sources.allocator.empty() ? "not given" : sources.allocator;
    using View = CardFigure::View;

    if (facts.allocated)
        addFigure(result, View::Allocator, "allocated", "Allocated (live tensors)", facts.allocated, allocatorSource,
            "what the model's tensors hold right now");
    if (facts.reserved)
        addFigure(result, View::Allocator, "reserved", "Reserved by PyTorch's allocator", facts.reserved,
            allocatorSource, "the cache PyTorch took from the driver: allocated plus cached free blocks");
    if (facts.reservedUnallocated)
        addFigure(result, View::Allocator, "cached_free", "Reserved but unallocated", facts.reservedUnallocated,
            message.reservedUnallocatedBytes ? allocatorSource : derived,
            "cached free blocks: reusable by PyTorch, not by anyone else; large means fragmentation");

    std::string processSource = sources.process.empty() ? "not given" : sources.process;
    if (facts.inferredSelfPid)
        processSource += " (PID " + std::to_string(*facts.inferredSelfPid) + ", the process holding PyTorch's cache)";
    addFigure(result, View::Process, "process_used", "This process on the card", facts.selfProcessBytes,
        facts.selfProcessBytes ? processSource : "not given",
        "what the driver charges this process: PyTorch's reserved memory plus everything else it holds");
    if (facts.selfNonPyTorchBytes)
        addFigure(result, View::Process, "process_outside_allocator", "This process outside PyTorch's allocator",
            facts.selfNonPyTorchBytes, derived, "process − reserved: " + outsideCacheHolders(facts.backend));

    addFigure(result, View::Card, "card_total", "Total capacity", facts.total, sources.total,
        "what the driver reports for the whole card");
    addFigure(result, View::Card, "card_used", "Used", *facts.total >= *facts.free ? *facts.total - *facts.free : 0,
        derived, "total − free: every process's memory and every context");
    addFigure(result, View::Card, "card_free", "Free", facts.free, sources.free,
        "what the driver could still hand out when the figures were taken");
    if (facts.outsideBytes)
        addFigure(result, View::Card, "outside_allocator", "Used outside PyTorch's allocator", facts.outsideBytes,
            derived, "used − reserved: this process's non-PyTorch memory and other processes — the rest of the card");
    if (facts.otherProcessBytes > 0 || !facts.otherPids.empty())
        addFigure(result, View::Card, "other_processes", "Other processes", facts.otherProcessBytes,
            sources.process.empty() ? "OOM message" : sources.process,
            std::to_string(facts.otherPids.size()) + (facts.otherPids.size() == 1 ? " process" : " processes")
                + " besides this one");
    if (const auto unattributed = facts.unattributedOutsideBytes(); unattributed && facts.selfProcessBytes)
        addFigure(result, View::Card, "unattributed", "Used by no listed process", unattributed, derived,
            "used − this process − other processes: unseen processes, or figures from different moments");

    result.restOfCardBytes = facts.outsideBytes;
    if (facts.outsideBytes && *facts.outsideBytes > 0)
        result.parts = restOfCardParts(facts.backend);
    result.restExplainsVerdict = !result.parts.empty() && restExplainsCase(analysis.diagnoses);
    result.restMatters = !result.parts.empty() && (result.restExplainsVerdict || restCoversShortfall(facts));
    addBands(result, facts);
    addNotes(result, facts, input);
    addOomChecks(result, input, analysis);
    return result;
}

} // namespace oomlens
