#include "opening/atomicfile.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace oomlens {

namespace {

namespace fs = std::filesystem;

// Where the bytes really go: a symbolic link is followed to the file it names (which need not
// exist yet), so that the rename replaces that file and not the link.
fs::path finalTarget(const fs::path& path)
{
    fs::path target = path;
    std::error_code error;
    for (int depth = 0; depth < 128 && fs::is_symlink(fs::symlink_status(target, error)); ++depth) {
        const fs::path next = fs::read_symlink(target, error);
        if (error)
            return path;
        target = next.is_absolute() ? next : target.parent_path() / next;
    }
    return fs::is_symlink(fs::symlink_status(target, error)) ? path : target;
}

// A name beside `target` no other writer (another shard, another thread, another process) picks.
std::string temporaryName(const fs::path& target)
{
    static const unsigned process = std::random_device {}();
    static std::atomic<unsigned> counter { 0 };
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    char suffix[64];
    std::snprintf(
        suffix, sizeof suffix, ".%x.%llx.%x", process, static_cast<unsigned long long>(ticks), counter.fetch_add(1));
    return target.string() + suffix;
}

std::string systemError(int code)
{
    return std::generic_category().message(code);
}

#if defined(__unix__) || defined(__APPLE__)
bool writeAll(int descriptor, std::string_view bytes)
{
    while (!bytes.empty()) {
        const ssize_t written = ::write(descriptor, bytes.data(), bytes.size());
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        bytes.remove_prefix(static_cast<size_t>(written));
    }
    return true;
}

bool writeDirectly(const std::string& path, std::string_view bytes, std::string& error)
{
    const int descriptor = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (descriptor < 0) {
        error = systemError(errno);
        return false;
    }
    const bool written = writeAll(descriptor, bytes);
    const int failure = written ? 0 : errno;
    ::close(descriptor);
    if (!written)
        error = systemError(failure);
    return written;
}

// The new file, written, flushed and closed; false with `error` set (and nothing left) on failure.
bool writeTemporary(
    const std::string& temporary, const struct stat* existing, std::string_view bytes, std::string& error)
{
    // A new file gets 0666 less the umask, as any file the user creates; an existing one's
    // permissions are copied once the bytes are in.
    const int descriptor = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, existing ? 0600 : 0666);
    if (descriptor < 0) {
        error = systemError(errno);
        return false;
    }
    int failure = 0;
    if (!writeAll(descriptor, bytes) || (existing && ::fchmod(descriptor, existing->st_mode & 07777) != 0)
        || ::fsync(descriptor) != 0)
        failure = errno;
    if (::close(descriptor) != 0 && failure == 0)
        failure = errno;
    if (failure == 0)
        return true;
    error = systemError(failure);
    ::unlink(temporary.c_str());
    return false;
}
#endif

} // namespace

bool writeFileAtomically(const std::string& path, std::string_view bytes, std::string& error)
{
#if defined(__unix__) || defined(__APPLE__)
    struct stat existingStat = {};
    const bool exists = ::stat(path.c_str(), &existingStat) == 0;
    if (exists && ::access(path.c_str(), W_OK) != 0) {
        error = "Existing file " + path + " is not writable";
        return false;
    }
    if (exists && S_ISDIR(existingStat.st_mode)) {
        error = "Filename refers to a directory";
        return false;
    }
    if (exists && !S_ISREG(existingStat.st_mode))
        return writeDirectly(path, bytes, error); // a device or a pipe: nothing to rename over
    const fs::path target = finalTarget(path);
    const std::string temporary = temporaryName(target);
    if (!writeTemporary(temporary, exists ? &existingStat : nullptr, bytes, error))
        return false;
    if (::rename(temporary.c_str(), target.c_str()) != 0) {
        error = systemError(errno);
        ::unlink(temporary.c_str());
        return false;
    }
    return true;
#else
    std::error_code status;
    if (fs::is_directory(path, status)) {
        error = "Filename refers to a directory";
        return false;
    }
    const fs::path target = finalTarget(path);
    const std::string temporary = temporaryName(target);
    if (std::FILE* file = std::fopen(temporary.c_str(), "wb")) {
        const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
        if (std::fclose(file) == 0 && written) {
            fs::rename(temporary, target, status);
            if (!status)
                return true;
            error = status.message();
        } else {
            error = "cannot write the file";
        }
        fs::remove(temporary, status);
        return false;
    }
    error = std::strerror(errno);
    return false;
#endif
}

} // namespace oomlens
