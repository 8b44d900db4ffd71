#pragma once

#include <cstdint>
#include <string>

namespace oomlens {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t GiB = 1024 * MiB;

// "5.75 GiB", "512 bytes": the one place bytes become text, matching PyTorch's own format_size
// so numbers we print can be compared by eye with the OOM message.
std::string formatBytes(uint64_t bytes);
// Signed variant for differences and savings: "-5.60 GiB", "+1.10 GiB".
std::string formatSignedBytes(int64_t bytes);
// A difference between two runs: "+1.10 GiB", "-5.60 GiB", and "0" where they agree.
std::string formatBytesDelta(int64_t bytes);
// How many times one figure is another: "1.25x" (a measured peak over the formula's),
// "2.0x" with one decimal.
std::string formatRatio(double ratio, int decimals = 2);
// "12.3 ms", "4.56 s", "2 min 3 s".
std::string formatDurationUs(int64_t microseconds);

} // namespace oomlens
