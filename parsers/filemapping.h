#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

class QFile;

namespace oomlens {

// A whole file mapped read-only, so that a gigabyte snapshot is decoded straight from the page
// cache instead of being copied into memory first.
struct FileMapping
{
    std::string_view bytes;
    // Unmaps when the last reference goes: hand it to releaseInBackground once the bytes are
    // decoded, since unmapping a 2 GB mapping takes a fifth of a second. The mapping outlives
    // the file's handle.
    std::shared_ptr<void> owner;
};

// Maps `file` (open for reading) from start to end; nullopt where it cannot be mapped (an empty
// file, a pipe, a special file, a system without mmap), which the caller then reads instead.
std::optional<FileMapping> mapWholeFile(QFile& file);
// The same for an open file descriptor of a regular file holding `size` bytes.
std::optional<FileMapping> mapFileHandle(int handle, uint64_t size);

} // namespace oomlens
