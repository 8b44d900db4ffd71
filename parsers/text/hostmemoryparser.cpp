#include "parsers/text/hostmemoryparser.h"

#include "core/strings.h"
#include "core/utf8prefix.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <string>

namespace oomlens::text {

namespace {

// "anon-rss:98765432kB" -> bytes; the kernel prints kB (KiB).
std::optional<uint64_t> kilobytesAfter(std::string_view line, std::string_view marker)
{
    const size_t at = line.find(marker);
    if (at == std::string_view::npos)
        return std::nullopt;
    size_t end = 0;
    const auto value = parseIntegerAt(line, at + marker.size(), &end);
    if (!value || line.substr(end, 2) != "kB" || *value > (uint64_t(1) << 50))
        return std::nullopt;
    return *value * 1024;
}

std::optional<int64_t> pidAfter(std::string_view line, std::string_view marker)
{
    const size_t at = line.find(marker);
    if (at == std::string_view::npos)
        return std::nullopt;
    const auto value = parseIntegerAt(line, at + marker.size());
    if (!value || *value > 100000000)
        return std::nullopt;
    return static_cast<int64_t>(*value);
}

// "Killed process 12345 (python)" -> "python"
std::string processAfter(std::string_view line, size_t from)
{
    const size_t open = line.find('(', from);
    const size_t close = open == std::string_view::npos ? open : line.find(')', open);
    if (close == std::string_view::npos || close - open > 64)
        return {};
    return std::string(line.substr(open + 1, close - open - 1));
}

// A shell's report of a SIGKILLed job: "Killed", "[1]+  Killed  python train.py",
// "./run.sh: line 3: 4242 Killed   python train.py". A log sentence that merely starts with
// "Killed" ("Killed 3 stale workers") is not one: after the word comes a command or nothing.
bool isShellKilledLine(std::string_view text)
{
    if (text == "Killed")
        return true;
    size_t at = text.find("Killed");
    if (at == std::string_view::npos)
        return false;
    const std::string_view before = trimmed(text.substr(0, at));
    const std::string_view after = trimmed(text.substr(at + 6));
    if (!after.empty() && at + 6 < text.size() && text[at + 6] != ' ')
        return false; // "Killed:" or "Killedxyz"
    const bool command = after.empty() || contains(after, "python") || contains(after, ".py")
        || contains(after, "torchrun") || contains(after, "accelerate") || contains(after, "deepspeed")
        || contains(after, ".sh");
    if (!command)
        return false;
    if (before.empty())
        return true;
    // A progress bar never ends its line, so the shell's "Killed" lands right after it:
    // "Epoch 3:  41%|████      | 1203/2931 [12:41<18:13,  1.58it/s, loss=0.412]Killed".
    if (after.empty() && (contains(before, "it/s") || contains(before, "s/it") || contains(before, "%|")))
        return true;
    // "[1]+" job number, or "script: line N: PID"
    if (before.front() == '[' && (before.ends_with("]+") || before.ends_with("]-") || before.ends_with("]")))
        return true;
    return contains(before, ": line ") && isDigit(before.back());
}

bool hasExitStatus137(std::string_view text)
{
    for (std::string_view marker : { "exit status 137", "exit code 137", "exit code: 137", "Exit Code: 137",
             "exited with code 137", "exit_code=137", "exitcode 137", "returned 137", "status 137" }) {
        if (contains(text, marker))
            return true;
    }
    // torchrun: "failed (exitcode: -9) local_rank: 0 (pid: 1234)"; multiprocessing: "died with <Signals.SIGKILL: 9>"
    return contains(text, "exitcode: -9") || contains(text, "exitcode : -9") || contains(text, "Signals.SIGKILL")
        || contains(text, "signal 9: SIGKILL") || contains(text, "Signal 9 (SIGKILL)");
}

std::optional<HostMemoryKill> parseLine(std::string_view raw)
{
    const std::string_view text = trimmed(raw);
    if (text.empty() || text.size() > 4096)
        return std::nullopt;
    HostMemoryKill kill;
    if (const size_t at = text.find("Killed process "); at != std::string_view::npos
        && (contains(text, "Out of memory") || contains(text, "out of memory") || contains(text, "-rss:"))) {
        kill.kind = contains(text, "Memory cgroup") || contains(text, "memory cgroup") ? HostKillKind::Cgroup
                                                                                       : HostKillKind::KernelOomKiller;
        kill.pid = pidAfter(text, "Killed process ");
        kill.process = processAfter(text, at);
        kill.residentBytes = kilobytesAfter(text, "anon-rss:");
    } else if (contains(text, "oom-kill:constraint=")) {
        kill.kind = contains(text, "CONSTRAINT_MEMCG") ? HostKillKind::Cgroup : HostKillKind::KernelOomKiller;
        kill.pid = pidAfter(text, ",pid=");
        if (const size_t task = text.find(",task="); task != std::string_view::npos) {
            const size_t end = text.find(',', task + 6);
            kill.process = std::string(text.substr(task + 6, end == std::string_view::npos ? end : end - task - 6));
        }
    } else if ((contains(text, "oom-kill event") || contains(text, "oom_kill event"))
        && (contains(text, "slurmstepd") || contains(text, "cgroup"))) {
        kill.kind = HostKillKind::Cgroup;
    } else if (contains(text, "OOMKilled")) {
        kill.kind = HostKillKind::Cgroup; // Kubernetes: the container passed its memory limit
    } else if (contains(text, "memory: usage ") && contains(text, ", limit ") && contains(text, "failcnt")) {
        kill.kind = HostKillKind::Cgroup;
        kill.limitBytes = kilobytesAfter(text, ", limit ");
    } else if (const size_t worker = text.find("DataLoader worker (pid"); worker != std::string_view::npos) {
        if (contains(text, "killed by signal: Killed"))
            kill.kind = HostKillKind::DataloaderWorker;
        else if (contains(text, "killed by signal: Bus error"))
            kill.kind = HostKillKind::SharedMemory;
        else
            return std::nullopt;
        kill.pid = pidAfter(text, "DataLoader worker (pid ");
    } else if (isShellKilledLine(text)) {
        kill.kind = HostKillKind::Killed;
    } else if (hasExitStatus137(text)) {
        kill.kind = HostKillKind::Exit137;
        kill.pid = pidAfter(text, "(pid: ");
    } else {
        return std::nullopt;
    }
    kill.line = normalizedWhitespace(utf8Prefix(text, 400));
    return kill;
}

} // namespace

std::vector<HostMemoryKill> findHostMemoryKills(const TextLines& lines)
{
    std::vector<HostMemoryKill> kills;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        // Cheap filter first: a training log has millions of lines and few of them mention a kill.
        if (!contains(line, "ill") && !contains(line, "137") && !contains(line, "-9") && !contains(line, "SIGKILL")
            && !contains(line, "failcnt"))
            continue;
        if (auto kill = parseLine(line)) {
            kill->sourceLine = lines.lineNumber(i);
            kills.push_back(std::move(*kill));
            if (kills.size() >= 64)
                break; // a crash loop repeats itself; the first few tell the story
        }
    }
    return kills;
}

} // namespace oomlens::text
