#include "core/diagnosis/oomfacts.h"

#include <algorithm>
#include <cmath>

namespace oomlens {

namespace {

// NVML reports ULLONG_MAX ("17179869184.00 GiB") when it cannot tell; anything beyond the card
// (with slack for rounding) is such a sentinel, not a real figure.
bool believable(uint64_t bytes, const std::optional<uint64_t>& total)
{
    if (!total)
        return bytes < (uint64_t(1) << 50);
    return static_cast<double>(bytes) <= static_cast<double>(*total) * 1.02;
}

// PyTorch names its own line "this process" by comparing NVML's PIDs with getpid(). Inside a
// container NVML reports host PIDs, so the run itself is listed as "Process N has X memory in use"
// and no line says "this process". Every process with a context on the card is in NVML's list, so
// then one of the listed ones is this run: the one whose usage covers PyTorch's reserved bytes by
// the least, the rest being a CUDA context and library workspaces.
void inferSelfFromHostPids(const OomMessage& message, OomFacts& facts)
{
    if (!facts.reserved || facts.otherPids.empty())
        return;
    const bool selfListed
        = std::any_of(message.processes.begin(), message.processes.end(), [](const ProcessUsage& p) { return p.self; });
    if (selfListed)
        return;
    constexpr uint64_t roundingSlack = 64ULL << 20; // both figures are printed to two decimals
    const ProcessUsage* best = nullptr;
    for (const auto& process : message.processes) {
        if (!process.pid || !process.bytes || !believable(*process.bytes, facts.total))
            continue;
        if (*process.bytes + roundingSlack < *facts.reserved)
            continue; // holds less than this run's cache: cannot be this run
        if (!best || *process.bytes < *best->bytes)
            best = &process;
    }
    if (!best)
        return;
    facts.inferredSelfPid = *best->pid;
    facts.selfProcessBytes = *best->bytes;
    facts.otherProcessBytes -= std::min(facts.otherProcessBytes, *best->bytes);
    const auto pid = std::find(facts.otherPids.begin(), facts.otherPids.end(), *best->pid);
    if (pid != facts.otherPids.end())
        facts.otherPids.erase(pid);
}

// The figures and facts the message prints, as printed.
OomFacts printedFacts(const OomMessage& message)
{
    OomFacts facts;
    facts.device = message.device.value_or(0);
    facts.backend = message.backend;
    facts.request = message.requestedBytes;
    facts.total = message.totalBytes;
    facts.free = message.freeBytes;
    facts.allocated = message.allocatedBytes;
    facts.reserved = message.reservedBytes;
    facts.reservedUnallocated = message.reservedUnallocatedBytes;
    facts.allowed = message.allowedBytes;
    facts.mpsOtherBytes = message.otherAllocationsBytes;
    facts.probable = message.probable;
    facts.asyncAllocator = message.templateId == OomTemplate::CudaMallocAsync;
    facts.platformLimit = message.platformLimitBytes;
    facts.xlaBuffers = message.xlaBuffers;
    facts.trainableParameters = message.trainableParameters;
    facts.totalParameters = message.totalParameters;
    facts.recipe = message.recipe;
    facts.memoryLog = message.memoryLog;
    return facts;
}

// reserved = allocated + unallocated: either side completes the other.
void completeCacheFigures(OomFacts& facts)
{
    if (!facts.reserved && facts.allocated && facts.reservedUnallocated)
        facts.reserved = *facts.allocated + *facts.reservedUnallocated;
    if (!facts.reservedUnallocated && facts.reserved && facts.allocated && *facts.reserved >= *facts.allocated)
        facts.reservedUnallocated = *facts.reserved - *facts.allocated;
    if (facts.asyncAllocator && !facts.reserved && facts.allocated)
        facts.reserved = facts.allocated;
}

// What this process may use: the card, or a per-process fraction of it.
void readLimit(OomFacts& facts, bool mps)
{
    // MPS prints its high-watermark limit as "max allowed": that is the card as far as MPS goes,
    // not a user-chosen fraction of it.
    if (mps) {
        if (!facts.total && facts.allowed)
            facts.total = facts.allowed;
        facts.allowed.reset();
        if (!facts.reserved && facts.allocated)
            facts.reserved = facts.allocated;
    }
    facts.limit = facts.allowed ? facts.allowed : facts.total;
    if (facts.total && facts.allowed)
        facts.limit = std::min(*facts.total, *facts.allowed);
}

// The NVML clause's processes: this one and the others, believable figures only.
void splitProcesses(const OomMessage& message, OomFacts& facts)
{
    for (const auto& process : message.processes) {
        if (!process.bytes)
            continue;
        if (!believable(*process.bytes, facts.total)) {
            facts.garbageProcessNumbers = true;
            continue;
        }
        if (process.self) {
            facts.selfProcessBytes = facts.selfProcessBytes.value_or(0) + *process.bytes;
        } else {
            facts.otherProcessBytes += *process.bytes;
            if (process.pid)
                facts.otherPids.push_back(*process.pid);
        }
    }
    inferSelfFromHostPids(message, facts);
}

// Memory on the card outside PyTorch's cache (this process's own beyond it, and anyone's), and
// figures that cannot all be true.
void deriveMemoryOutsideCache(OomFacts& facts, bool mps)
{
    if (facts.selfProcessBytes && facts.reserved && *facts.selfProcessBytes >= *facts.reserved)
        facts.selfNonPyTorchBytes = *facts.selfProcessBytes - *facts.reserved;
    if (mps && facts.mpsOtherBytes)
        facts.selfNonPyTorchBytes = facts.mpsOtherBytes;

    if (facts.total && facts.free && facts.reserved) {
        const uint64_t used = *facts.free + *facts.reserved;
        if (used <= *facts.total)
            facts.outsideBytes = *facts.total - used;
        else if (static_cast<double>(used) > static_cast<double>(*facts.total) * 1.02)
            facts.inconsistent = true;
    }
    if (mps && facts.total && facts.reserved) {
        const uint64_t held = *facts.reserved + facts.mpsOtherBytes.value_or(0);
        facts.outsideBytes = facts.mpsOtherBytes.value_or(0);
        if (held <= *facts.total && !facts.free)
            facts.free = *facts.total - held;
    }
    if (facts.total && facts.allocated
        && static_cast<double>(*facts.allocated) > static_cast<double>(*facts.total) * 1.02)
        facts.inconsistent = true;
}

// The failing phase (the message's, else the traceback's) and the traceback's frames.
void readTraceback(const OomMessage& message, OomFacts& facts)
{
    facts.phase = message.phase;
    if (!message.traceback)
        return;
    if (facts.phase == Phase::Unknown)
        facts.phase = message.traceback->phase;
    facts.phaseEvidence = message.traceback->phaseEvidence;
    for (const auto& frame : message.traceback->frames) {
        facts.tracebackFunctions.push_back(frame.function);
        if (!frame.code.empty())
            facts.tracebackFunctions.push_back(frame.code);
    }
    if (!message.traceback->frames.empty())
        facts.failingFrame = message.traceback->frames.back();
}

} // namespace

std::optional<uint64_t> OomFacts::unattributedOutsideBytes() const
{
    if (!outsideBytes)
        return std::nullopt;
    const uint64_t known = otherProcessBytes + selfNonPyTorchBytes.value_or(0);
    return *outsideBytes > known ? *outsideBytes - known : 0;
}

OomFacts oomFacts(const OomMessage& message)
{
    OomFacts facts = printedFacts(message);
    completeCacheFigures(facts);
    const bool mps = message.backend == Backend::Mps;
    readLimit(facts, mps);
    // 2.1's template left out the allowed clause although set_per_process_memory_fraction existed;
    // T0 (<=1.3) predates the function itself (1.8), so a cap cannot explain its refusals.
    facts.preAllowedClause = message.templateId == OomTemplate::T2;
    facts.preExpandableTorch = message.templateId == OomTemplate::T0 || message.templateId == OomTemplate::T1;
    splitProcesses(message, facts);
    deriveMemoryOutsideCache(facts, mps);
    readTraceback(message, facts);
    return facts;
}

void addNvidiaSmi(OomFacts& facts, const std::vector<NvidiaSmiTable>& tables)
{
    for (const auto& table : tables) {
        for (const auto& gpu : table.gpus) {
            if (gpu.index == facts.device && gpu.totalBytes && !facts.total) {
                facts.total = gpu.totalBytes;
                if (!facts.limit)
                    facts.limit = gpu.totalBytes;
            }
        }
        if (!facts.otherPids.empty() || facts.otherProcessBytes > 0)
            continue; // the message's own NVML clause is more precise
        std::vector<const GpuProcess*> rows;
        for (const auto& process : table.processes) {
            if (process.gpu == facts.device && process.bytes && believable(*process.bytes, facts.total))
                rows.push_back(&process);
        }
        if (rows.size() < 2)
            continue; // one process: most likely this run itself
        // Which row is this run is unknown (container PIDs differ from the host's); the one whose
        // usage is closest to PyTorch's reserved bytes is the best guess, the rest are others.
        const uint64_t reserved = facts.reserved.value_or(0);
        const auto distance = [reserved](const GpuProcess* p) {
            return *p->bytes > reserved ? *p->bytes - reserved : reserved - *p->bytes;
        };
        const auto self = std::min_element(rows.begin(), rows.end(),
            [&](const GpuProcess* a, const GpuProcess* b) { return distance(a) < distance(b); });
        for (auto it = rows.begin(); it != rows.end(); ++it) {
            if (it == self)
                continue;
            facts.otherProcessBytes += *(*it)->bytes;
            if ((*it)->pid)
                facts.otherPids.push_back(*(*it)->pid);
        }
    }
}

} // namespace oomlens
