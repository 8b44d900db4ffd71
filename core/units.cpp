#include "core/units.h"

#include <cmath>
#include <cstdio>

namespace oomlens {

std::string formatBytes(uint64_t bytes)
{
    char buffer[64];
    if (bytes <= KiB)
        std::snprintf(buffer, sizeof buffer, "%llu bytes", static_cast<unsigned long long>(bytes));
    else if (bytes <= MiB)
        std::snprintf(buffer, sizeof buffer, "%.2f KiB", static_cast<double>(bytes) / KiB);
    else if (bytes <= GiB)
        std::snprintf(buffer, sizeof buffer, "%.2f MiB", static_cast<double>(bytes) / MiB);
    else
        std::snprintf(buffer, sizeof buffer, "%.2f GiB", static_cast<double>(bytes) / GiB);
    return buffer;
}

std::string formatSignedBytes(int64_t bytes)
{
    const uint64_t magnitude = bytes < 0 ? static_cast<uint64_t>(-(bytes + 1)) + 1 : static_cast<uint64_t>(bytes);
    return (bytes < 0 ? "-" : "+") + formatBytes(magnitude);
}

std::string formatBytesDelta(int64_t bytes)
{
    return bytes == 0 ? std::string("0") : formatSignedBytes(bytes);
}

std::string formatRatio(double ratio, int decimals)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*fx", decimals, ratio);
    return buffer;
}

std::string formatDurationUs(int64_t microseconds)
{
    char buffer[64];
    const double us = static_cast<double>(microseconds);
    if (std::llabs(microseconds) < 1000)
        std::snprintf(buffer, sizeof buffer, "%lld us", static_cast<long long>(microseconds));
    else if (std::llabs(microseconds) < 1000 * 1000)
        std::snprintf(buffer, sizeof buffer, "%.1f ms", us / 1e3);
    else if (std::llabs(microseconds) < 60LL * 1000 * 1000)
        std::snprintf(buffer, sizeof buffer, "%.2f s", us / 1e6);
    else {
        const long long seconds = microseconds / 1000000;
        std::snprintf(buffer, sizeof buffer, "%lld min %lld s", seconds / 60, seconds % 60);
    }
    return buffer;
}

} // namespace oomlens
