#include "views/startuptrace.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace oomlens {

namespace {

const char* markName(StartupMark mark)
{
    switch (mark) {
    case StartupMark::WindowPainted:
        return "window-painted";
    case StartupMark::TimelinePainted:
        return "timeline-painted";
    case StartupMark::CaseComplete:
        return "case-complete";
    }
    return "unknown";
}

int64_t clockNs(clockid_t clock)
{
    timespec now {};
    clock_gettime(clock, &now);
    return int64_t(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// The process' start in CLOCK_BOOTTIME nanoseconds: /proc/self/stat's 22nd field, in clock ticks.
int64_t processStartNs()
{
    std::ifstream file("/proc/self/stat");
    std::string line;
    std::getline(file, line);
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const size_t close = line.rfind(')');
    if (close == std::string::npos)
        return 0;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    for (int index = 3; index <= 22 && fields >> field; ++index) {
        if (index == 22)
            return int64_t(std::stoll(field)) * (1'000'000'000 / sysconf(_SC_CLK_TCK));
    }
    return 0;
}

} // namespace

void markStartup(StartupMark mark)
{
    static const bool enabled = std::getenv("OOMLENS_STARTUP_TRACE") != nullptr;
    if (!enabled)
        return;
    static std::array<std::atomic_bool, 3> reached {};
    if (reached[size_t(mark)].exchange(true))
        return;
    const int64_t sinceStart = clockNs(CLOCK_BOOTTIME) - processStartNs();
    std::fprintf(stderr, "oomlens-startup %s %lld %.1f %.1f\n", markName(mark),
        static_cast<long long>(clockNs(CLOCK_MONOTONIC)), double(sinceStart) / 1e6,
        double(clockNs(CLOCK_PROCESS_CPUTIME_ID)) / 1e6);
    std::fflush(stderr);
}

} // namespace oomlens
