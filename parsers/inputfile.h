#pragma once

// Reading a file a user named, whatever is at its path. A folder, a device (/dev/zero), a socket
// and a loop of symbolic links are each one clear error; a named pipe is read as a stream, and
// no read blocks on a pipe nobody writes to or goes on without end.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// A pipe, standard input or a file without a size (/proc) is read up to this many bytes: more is a
// stream that may never end. A regular file of any size is mapped instead (filemapping.h).
constexpr uint64_t maxStreamBytes = uint64_t(1) << 30;

// What a file was when it was opened: it changed while read when its stamp after differs.
struct FileStamp
{
    int64_t size = 0;
    int64_t modifiedNs = 0;
    uint64_t inode = 0;
    bool operator==(const FileStamp&) const = default;
};

struct InputFileBytes
{
    std::string_view bytes; // valid while `owner` lives
    // The mapping or the buffer behind `bytes`; hand a mapping to releaseInBackground once decoded.
    std::shared_ptr<void> owner;
    std::optional<FileStamp> stamp; // a regular file's, when opened; streams have none
    std::string error; // set when nothing could be read: one line, without the path
};

// A regular file mapped whole; a pipe or a file that reports no size read up to `streamLimit`.
InputFileBytes readInputFile(const std::string& path, uint64_t streamLimit = maxStreamBytes);

// A regular file for a sniffer that looks at a few of its pages (a snapshot's container, a
// summary's key): mapped without reading it ahead, or its first `headBytes` where it cannot be
// mapped. `error` is set for anything but a regular file.
InputFileBytes peekRegularFile(const std::string& path, size_t headBytes);

// Standard input read up to `streamLimit` bytes; nullopt with `error` set beyond it.
std::optional<std::string> readStandardInput(std::string* error, uint64_t streamLimit = maxStreamBytes);

// A small file read whole (category rules, a capture sidecar, a config.json, a rank summary):
// nullopt with `error` set when it cannot be read or holds more than `maxBytes`.
std::optional<std::string> readSmallFile(const std::string& path, uint64_t maxBytes, std::string* error);

// The file's stamp now; nullopt when it is gone or not a regular file.
std::optional<FileStamp> fileStamp(const std::string& path);

// "16 MiB", "1 GiB": a bound as the errors above word it.
std::string boundText(uint64_t bytes);

} // namespace oomlens
