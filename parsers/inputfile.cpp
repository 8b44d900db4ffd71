#include "parsers/inputfile.h"

#include "parsers/filemapping.h"

#include <QFile>

#include <cerrno>
#include <cstring>

#if defined(Q_OS_UNIX)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace oomlens {

namespace {

#if defined(Q_OS_UNIX)

// Why nothing could be opened at `path`, after stat() failed with `error`.
std::string missingReason(const QByteArray& path, int error)
{
    struct stat link = {};
    switch (error) {
    case ENOENT:
        return ::lstat(path.constData(), &link) == 0 ? "a symbolic link to a file that does not exist" : "no such file";
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
std::optional<QByteArray> readStream(int handle, uint64_t limit, std::string* error)
{
    QByteArray bytes;
    constexpr qsizetype chunk = qsizetype(1) << 20;
    for (;;) {
        const qsizetype before = bytes.size();
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
        bytes.resize(before + qsizetype(got));
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

InputFileBytes readInputFile(const QString& path, uint64_t streamLimit)
{
    InputFileBytes result;
#if defined(Q_OS_UNIX)
    const QByteArray native = QFile::encodeName(path);
    struct stat info = {};
    if (::stat(native.constData(), &info) != 0) {
        result.error = missingReason(native, errno);
        return result;
    }
    if (result.error = notReadableReason(info.st_mode); !result.error.empty())
        return result;
    // O_NONBLOCK: opening a named pipe nobody writes to would otherwise wait for a writer forever.
    Handle handle { ::open(native.constData(), O_RDONLY | O_NONBLOCK | O_CLOEXEC) };
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
    std::optional<QByteArray> bytes = readStream(handle.fd, streamLimit, &result.error);
#else
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        result.error = "cannot open the file (" + file.errorString().toStdString() + ")";
        return result;
    }
    std::optional<QByteArray> bytes = file.read(qint64(streamLimit) + 1);
    if (uint64_t(bytes->size()) > streamLimit) {
        result.error = "larger than " + boundText(streamLimit);
        bytes.reset();
    }
#endif
    if (!bytes)
        return result;
    auto buffer = std::make_shared<QByteArray>(std::move(*bytes));
    result.bytes = std::string_view(buffer->constData(), size_t(buffer->size()));
    result.owner = std::move(buffer);
    return result;
}

std::optional<QByteArray> readStandardInput(std::string* error, uint64_t streamLimit)
{
#if defined(Q_OS_UNIX)
    return readStream(STDIN_FILENO, streamLimit, error);
#else
    QFile input;
    if (!input.open(stdin, QIODevice::ReadOnly)) {
        *error = "cannot read standard input";
        return std::nullopt;
    }
    QByteArray bytes = input.read(qint64(streamLimit) + 1);
    if (uint64_t(bytes.size()) > streamLimit) {
        *error = "larger than " + boundText(streamLimit);
        return std::nullopt;
    }
    return bytes;
#endif
}

std::optional<QByteArray> readSmallFile(const QString& path, uint64_t maxBytes, std::string* error)
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
    return QByteArray(read.bytes.data(), qsizetype(read.bytes.size()));
}

std::optional<FileStamp> fileStamp(const QString& path)
{
#if defined(Q_OS_UNIX)
    struct stat info = {};
    if (::stat(QFile::encodeName(path).constData(), &info) != 0 || !S_ISREG(info.st_mode))
        return std::nullopt;
    return stampFrom(info);
#else
    Q_UNUSED(path);
    return std::nullopt;
#endif
}

} // namespace oomlens
