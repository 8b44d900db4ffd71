#include "core/textinputs.h"

#include "core/nametable.h"

#include <charconv>

namespace oomlens {

namespace {

constexpr NameTable<AllocatorBackend, 2> allocatorBackendNames { {
    { AllocatorBackend::Native, "native" },
    { AllocatorBackend::CudaMallocAsync, "cudaMallocAsync" },
} };

constexpr NameTable<HostKillKind, 6> hostKillKindNames { {
    { HostKillKind::KernelOomKiller, "kernel_oom_killer" },
    { HostKillKind::Cgroup, "cgroup" },
    { HostKillKind::DataloaderWorker, "dataloader_worker" },
    { HostKillKind::SharedMemory, "shared_memory" },
    { HostKillKind::Killed, "killed" },
    { HostKillKind::Exit137, "exit_137" },
} };

} // namespace

std::string_view hostKillKindName(HostKillKind kind)
{
    return nameIn(hostKillKindNames, kind);
}

std::optional<HostKillKind> hostKillKindFromName(std::string_view name)
{
    return valueNamed(hostKillKindNames, name);
}

std::string_view allocatorBackendName(AllocatorBackend backend)
{
    return nameIn(allocatorBackendNames, backend);
}

bool AllocConfSetting::expandableSegments() const
{
    const auto it = options.find("expandable_segments");
    return it != options.end() && (it->second == "True" || it->second == "true" || it->second == "1");
}

std::optional<int64_t> AllocConfSetting::maxSplitSizeMb() const
{
    const auto it = options.find("max_split_size_mb");
    if (it == options.end())
        return std::nullopt;
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
    if (ec != std::errc())
        return std::nullopt;
    return value;
}

std::string OomMessage::wordingName() const
{
    return templateId == OomTemplate::None ? backendText(backend) : oomTemplateText(templateId);
}

AllocatorBackend AllocConfSetting::backend() const
{
    const auto it = options.find("backend");
    if (it == options.end())
        return AllocatorBackend::Native;
    return valueNamed(allocatorBackendNames, it->second).value_or(AllocatorBackend::Native);
}

Phase TextFindings::failingPhase() const
{
    for (const OomMessage& message : oomMessages) {
        if (message.phase != Phase::Unknown)
            return message.phase;
        if (message.traceback && message.traceback->phase != Phase::Unknown)
            return message.traceback->phase;
    }
    for (const TracebackInfo& traceback : tracebacks) {
        if (traceback.phase != Phase::Unknown)
            return traceback.phase;
    }
    return Phase::Unknown;
}

} // namespace oomlens
