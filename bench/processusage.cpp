#include "bench/processusage.h"

#include <fstream>
#include <string>

#include <sys/resource.h>

namespace oomlens::bench {

namespace {

rusage selfUsage()
{
    rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return usage;
}

double seconds(const timeval& t)
{
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

} // namespace

double cpuSeconds()
{
    const rusage usage = selfUsage();
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double peakRssMiB()
{
    return static_cast<double>(selfUsage().ru_maxrss) / 1024.0; // Linux reports KiB
}

double currentRssMiB()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with("VmRSS:"))
            return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
}

} // namespace oomlens::bench
