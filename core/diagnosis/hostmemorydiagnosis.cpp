#include "core/diagnosis/hostmemorydiagnosis.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/fixladder.h"
#include "core/units.h"
#include "core/utf8prefix.h"

#include <algorithm>

namespace oomlens {

namespace {

// How strongly one line says "the host ran out of memory". The kernel's and a cgroup's own reports
// say it in words (0.9). A DataLoader worker dying of SIGKILL is the OOM killer almost every time:
// nothing else in a training job sends SIGKILL to a worker (0.85). A full /dev/shm kills a worker
// with SIGBUS (0.8). A bare "Killed" or exit status 137 is SIGKILL from someone: most often the OOM
// killer, but a scheduler's time limit, preemption or a user's kill -9 look the same (0.6).
double strength(HostKillKind kind)
{
    if (kind == HostKillKind::KernelOomKiller || kind == HostKillKind::Cgroup)
        return 0.9;
    if (kind == HostKillKind::DataloaderWorker)
        return 0.85;
    if (kind == HostKillKind::SharedMemory)
        return 0.8;
    return 0.6;
}

std::string describe(const HostMemoryKill& kill)
{
    std::string text;
    if (kill.kind == HostKillKind::KernelOomKiller)
        text = "the kernel's OOM killer ended ";
    else if (kill.kind == HostKillKind::Cgroup)
        text = "the job's memory cgroup (its RAM limit) was exceeded and its OOM killer ended ";
    else if (kill.kind == HostKillKind::DataloaderWorker)
        text = "a DataLoader worker was killed by SIGKILL, the OOM killer's signal: ";
    else if (kill.kind == HostKillKind::SharedMemory)
        text = "a DataLoader worker died of SIGBUS, which is what a full /dev/shm does: ";
    else if (kill.kind == HostKillKind::Killed)
        text = "the shell reports the process \"Killed\" (SIGKILL, usually the OOM killer): ";
    else
        text = "exit status 137 / signal -9 means SIGKILL, usually the OOM killer: ";
    if (kill.kind == HostKillKind::KernelOomKiller || kill.kind == HostKillKind::Cgroup) {
        text += kill.process.empty() ? std::string("a process") : kill.process;
        if (kill.pid)
            text += " (pid " + std::to_string(*kill.pid) + ")";
        if (kill.residentBytes)
            text += " holding " + formatBytes(*kill.residentBytes) + " of RAM (anon-rss)";
        if (kill.limitBytes)
            text += "; the limit is " + formatBytes(*kill.limitBytes);
        text += ": ";
    }
    return text + "\"" + std::string(utf8Prefix(kill.line, 160)) + "\""
        + (kill.sourceLine ? " at line " + std::to_string(kill.sourceLine) : "");
}

bool anyKind(const std::vector<HostMemoryKill>& kills, HostKillKind kind)
{
    return std::any_of(kills.begin(), kills.end(), [&](const HostMemoryKill& kill) { return kill.kind == kind; });
}

bool loadingWhenKilled(const TextFindings& findings)
{
    for (const auto& traceback : findings.tracebacks) {
        if (traceback.phase == Phase::Load)
            return true;
    }
    return false;
}

} // namespace

std::optional<Diagnosis> diagnoseHostMemory(const TextFindings& findings)
{
    const auto& kills = findings.hostKills;
    if (kills.empty())
        return std::nullopt;
    // The confidence is that of the strongest line; a second, independent kind of line (the kernel's
    // report and the shell's "Killed") confirms it.
    double confidence = 0.0;
    const HostMemoryKill* strongest = nullptr;
    for (const auto& kill : kills) {
        if (strength(kill.kind) > confidence) {
            confidence = strength(kill.kind);
            strongest = &kill;
        }
    }
    const bool confirmed
        = std::any_of(kills.begin(), kills.end(), [&](const HostMemoryKill& k) { return k.kind != strongest->kind; });
    if (confirmed)
        confidence = std::min(0.95, confidence + 0.05);

    Diagnosis d = makeDiagnosis(DiagnosisId::HostMemory, confidence, {});
    d.evidence.push_back({ describe(*strongest), std::nullopt });
    size_t shown = 1;
    for (const auto& kill : kills) {
        if (&kill == strongest || shown >= 4)
            continue;
        d.evidence.push_back({ describe(kill), std::nullopt });
        ++shown;
    }
    if (kills.size() > shown)
        d.evidence.push_back({ std::to_string(kills.size() - shown) + " more such lines in the input", std::nullopt });
    d.evidence.push_back({ "no GPU memory figure is involved: a kill by SIGKILL comes from the host, and GPU-side "
                           "fixes (smaller micro-batch, checkpointing, sharding) do not change host RAM",
        std::nullopt });

    const bool workers = anyKind(kills, HostKillKind::DataloaderWorker);
    const bool sharedMemory = anyKind(kills, HostKillKind::SharedMemory);
    const bool cgroup = anyKind(kills, HostKillKind::Cgroup);
    const bool loading = loadingWhenKilled(findings);
    if (sharedMemory && !workers)
        d.summary = "A DataLoader worker died because /dev/shm, the shared memory batches travel through, is full.";
    else if (workers)
        d.summary = "The host ran out of RAM and the OOM killer ended a DataLoader worker: the workers' copies "
                    "of the dataset and their prefetched batches are the usual cause, not the GPU.";
    else if (cgroup)
        d.summary = "The job passed its memory limit (cgroup) and was killed: host RAM, not GPU memory, ran out.";
    else
        d.summary = "The process was killed for using too much host RAM (SIGKILL from the OOM killer), not for "
                    "GPU memory.";
    if (loading)
        d.evidence.push_back({ "the traceback shows the run loading a checkpoint when it was killed", std::nullopt });

    FixContext context;
    if (sharedMemory && !workers)
        appendFixes(d.fixes, { FixKind::HostSharedMemory, FixKind::HostFewerWorkers }, context);
    if (loading)
        appendFixes(d.fixes, { FixKind::HostLazyCheckpoint }, context);
    if (cgroup && !workers)
        appendFixes(d.fixes, { FixKind::HostFewerWorkers, FixKind::HostMemoryLimit }, context);
    appendFixes(d.fixes,
        { FixKind::HostFewerWorkers, FixKind::HostSharedDataset, FixKind::HostPinMemory, FixKind::HostLazyCheckpoint,
            FixKind::HostMemoryLimit },
        context);
    if (sharedMemory)
        appendFixes(d.fixes, { FixKind::HostSharedMemory }, context);
    return d;
}

} // namespace oomlens
