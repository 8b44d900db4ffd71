#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlens::text {

// One size as printed by PyTorch, XLA or nvidia-smi: "3.50 GiB", "512 bytes", "16.00GiB", "720.00 MB".
struct SizeToken
{
    std::optional<uint64_t> bytes; // empty when the value does not fit: NVML's 2^64 "not available"
    size_t begin = 0; // where the number starts in the scanned text
    size_t end = 0; // one past the unit
    bool garbage = false; // the value is absurd (>= 2^63 bytes), as NVML prints for "unknown"
};

// Parses a size starting at `pos` (leading spaces skipped). Units are binary whatever their spelling:
// PyTorch's format_size, MPS's KB/MB/GB and memory_summary's KB/MB all divide by 1024.
// The result is exact: "3.50 GiB" is round(3.50 * 2^30).
std::optional<SizeToken> parseSizeAt(std::string_view text, size_t pos);

// The first size after `marker` (the marker itself must be found at or after `from`).
std::optional<SizeToken> sizeAfter(std::string_view text, std::string_view marker, size_t from = 0);

// A bare unsigned integer at `pos` (leading spaces skipped); sets `end` past it.
std::optional<uint64_t> parseIntegerAt(std::string_view text, size_t pos, size_t* end = nullptr);

// Bytes for a unit word, or 0 when it is not a unit ("bytes", "B", "KiB", "KB", "MiB", ...).
uint64_t unitMultiplier(std::string_view unit);

} // namespace oomlens::text
