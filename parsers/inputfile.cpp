#include "parsers/inputfile.h"

#include "parsers/filemapping.h"

#include <cerrno>
#include <cstring>

#if defined(__unix__) || defined(__APPLE__)
#define OOMLENS_POSIX_FILES 1
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#else
#include <fstream>
#include <iostream>
#endif

namespace oomlens {

namespace {

#if defined(OOMLENS_POSIX_FILES)

// Why nothing could be opened at `path`, after stat() failed with `error`.
std::string missingReason(const std::string& path, int error)
{
    struct stat link = {};
    switch (error) {
    case ENOENT:
        return ::lstat(path.c_str(), &link) == 0 ? "a symbolic link to a file that does not exist" : "no such file";
    case ENOTDIR:
        return "no such file";
    case ELOOP:
        return "its symbolic links form a loop";
    case EACCES:
        return "permission denied";
    default:
        return std::strerror(error);
    }
}

// Why a path that exists is not something to read as an input; empty for a file or a pipe.
std::string notReadableReason(mode_t mode)
{
    if (S_ISDIR(mode))
        return "is a folder, not a file";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "is a device, not a file";
    if (S_ISSOCK(mode))
        return "is a socket, not a file";
    return {};
}

FileStamp stampFrom(const struct stat& info)
{
    return { int64_t(info.st_size), int64_t(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec,
        uint64_t(info.st_ino) };
}

// Reads `handle` to its end, or fails once more than `limit` bytes came.
std::optional<std::string> readStream(int handle, uint64_t limit, std::string* error)
{
    std::string bytes;
    constexpr size_t chunk = size_t(1) << 20;
    for (;;) {
        const size_t before = bytes.size();
        bytes.resize(before + chunk);
        const ssize_t got = ::read(handle, bytes.data() + before, size_t(chunk));
        if (got < 0 && errno == EINTR) {
            bytes.resize(before);
            continue;
        }
        if (got < 0) {
            *error = std::string("reading failed (") + std::strerror(errno) + ")";
            return std::nullopt;
        }
        bytes.resize(before + size_t(got));
        if (got == 0)
            return bytes;
        if (uint64_t(bytes.size()) > limit) {
            *error = "more than " + boundText(limit)
                + " came without an end (an endless stream?); save what matters to a file and give that";
            return std::nullopt;
        }
    }
}

struct Handle
{
    int fd = -1;
    ~Handle()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

#else

// Reads `input` to its end, or fails once more than `limit` bytes came.
std::optional<std::string> readAtMost(std::istream& input, uint64_t limit, std::string* error)
{
    std::string bytes;
    constexpr size_t chunk = size_t(1) << 20;
    while (input) {
        const size_t before = bytes.size();
        bytes.resize(before + chunk);
        input.read(bytes.data() + before, std::streamsize(chunk));
        bytes.resize(before + size_t(input.gcount()));
        if (bytes.size() > limit) {
            *error = "larger than " + boundText(limit);
            return std::nullopt;
        }
    }
    return bytes;
}

#endif

} // namespace

std::string boundText(uint64_t bytes)
{
    if (bytes >= (uint64_t(1) << 30) && bytes % (uint64_t(1) << 30) == 0)
        return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

InputFileBytes readInputFile(const std::string& path, uint64_t streamLimit)
{
    InputFileBytes result;
#if defined(OOMLENS_POSIX_FILES)
    struct stat info = {};
    if (::stat(path.c_str(), &info) != 0) {
        result.error = missingReason(path, errno);
        return result;
    }
    if (result.error = notReadableReason(info.st_mode); !result.error.empty())
        return result;
    // O_NONBLOCK: opening a named pipe nobody writes to would otherwise wait for a writer forever.
    Handle handle { ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC) };
    if (handle.fd < 0) {
        result.error = std::string("cannot open the file (") + std::strerror(errno) + ")";
        return result;
    }
    // What was opened, which may not be what stat() saw a moment ago.
    if (::fstat(handle.fd, &info) != 0 || !(result.error = notReadableReason(info.st_mode)).empty()) {
        if (result.error.empty())
            result.error = std::strerror(errno);
        return result;
    }
    // Reads wait for a pipe's writer again; one that never wrote reads as an empty input.
    ::fcntl(handle.fd, F_SETFL, ::fcntl(handle.fd, F_GETFL) & ~O_NONBLOCK);
    if (S_ISREG(info.st_mode)) {
        result.stamp = stampFrom(info);
        if (std::optional<FileMapping> mapping = mapFileHandle(handle.fd, uint64_t(info.st_size))) {
            result.bytes = mapping->bytes;
            result.owner = std::move(mapping->owner);
            return result;
        }
    }
    std::optional<std::string> bytes = readStream(handle.fd, streamLimit, &result.error);
#else
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        result.error = std::string("cannot open the file (") + std::strerror(errno) + ")";
        return result;
    }
    std::optional<std::string> bytes = readAtMost(file, streamLimit, &result.error);
#endif
    if (!bytes)
        return result;
    auto buffer = std::make_shared<std::string>(std::move(*bytes));
    result.bytes = std::string_view(buffer->data(), buffer->size());
    result.owner = std::move(buffer);
    return result;
}

InputFileBytes peekRegularFile(const std::string& path, size_t headBytes)
{
    InputFileBytes result;
#if defined(OOMLENS_POSIX_FILES)
    // O_NONBLOCK: what was a file a moment ago may be a pipe nobody writes to now.
    Handle handle { ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC) };
    struct stat info = {};
    if (handle.fd < 0 || ::fstat(handle.fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        result.error = "not a regular file";
        return result;
    }
    if (std::optional<FileMapping> mapping = mapFileHandle(handle.fd, uint64_t(info.st_size), false)) {
        result.bytes = mapping->bytes;
        result.owner = std::move(mapping->owner);
        return result;
    }
    auto head = std::make_shared<std::string>(headBytes, '\0');
    size_t got = 0;
    while (got < headBytes) {
        const ssize_t read = ::read(handle.fd, head->data() + got, headBytes - got);
        if (read < 0 && errno == EINTR)
            continue;
        if (read <= 0)
            break;
        got += size_t(read);
    }
    head->resize(got);
#else
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        result.error = "not a regular file";
        return result;
    }
    auto head = std::make_shared<std::string>(headBytes, '\0');
    file.read(head->data(), std::streamsize(headBytes));
    head->resize(size_t(file.gcount()));
#endif
    result.bytes = *head;
    result.owner = std::move(head);
    return result;
}

std::optional<std::string> readStandardInput(std::string* error, uint64_t streamLimit)
{
#if defined(OOMLENS_POSIX_FILES)
    return readStream(STDIN_FILENO, streamLimit, error);
#else
    std::ios::sync_with_stdio(true);
    return readAtMost(std::cin, streamLimit, error);
#endif
}

std::optional<std::string> readSmallFile(const std::string& path, uint64_t maxBytes, std::string* error)
{
    const InputFileBytes read = readInputFile(path, maxBytes);
    if (!read.error.empty()) {
        *error = read.error;
        return std::nullopt;
    }
    if (read.bytes.size() > maxBytes) {
        *error = "larger than " + boundText(maxBytes);
        return std::nullopt;
    }
    return std::string(read.bytes);
}

std::optional<FileStamp> fileStamp(const std::string& path)
{
#if defined(OOMLENS_POSIX_FILES)
    struct stat info = {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        return std::nullopt;
    return stampFrom(info);
#else
    (void)path;
    return std::nullopt;
#endif
}

} // namespace oomlens
