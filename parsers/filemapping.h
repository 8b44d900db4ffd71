#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

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

// Maps the open file descriptor `handle` of a regular file holding `size` bytes from start to end;
// nullopt where it cannot be mapped (an empty file, a pipe, a special file, a system without
// mmap), which the caller then reads instead. `wholeRead`: the bytes will be read from end to end,
// so a big file's pages are brought in at once; a sniffer that reads a few pages passes false.
std::optional<FileMapping> mapFileHandle(int handle, uint64_t size, bool wholeRead = true);

} // namespace oomlens
