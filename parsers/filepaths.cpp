#include "parsers/filepaths.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>

#if defined(__unix__) || defined(__APPLE__)
#define OOMLENS_POSIX_PATHS 1
#include <sys/stat.h>
#endif

namespace oomlens {

namespace fs = std::filesystem;

namespace {

// An absolute path with empty and "." segments dropped and each ".." taking the segment before it
// away (kept where there is none); no trailing '/' but for the root itself.
std::string cleanAbsolute(std::string_view path)
{
    std::vector<std::string_view> segments;
    size_t start = 0;
    while (start <= path.size()) {
        const size_t slash = std::min(path.find('/', start), path.size());
        const std::string_view segment = path.substr(start, slash - start);
        start = slash + 1;
        if (segment.empty() || segment == ".")
            continue;
        if (segment == ".." && !segments.empty() && segments.back() != "..")
            segments.pop_back();
        else
            segments.push_back(segment);
    }
    std::string clean;
    for (const std::string_view segment : segments) {
        clean += '/';
        clean += segment;
    }
    return clean.empty() ? std::string("/") : clean;
}

// What an entry of a folder listing is, by folderEntries' rule.
bool listed(const fs::directory_entry& entry, bool withFolders)
{
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.')
        return false;
    std::error_code error;
    const fs::file_status own = entry.symlink_status(error);
    if (error)
        return false;
    const fs::file_status target = fs::is_symlink(own) ? entry.status(error) : own;
    if (error || !fs::exists(target))
        return false; // a dangling link, or a loop of them
    if (fs::is_directory(target))
        return withFolders;
    return fs::is_regular_file(target) || fs::is_symlink(own);
}

} // namespace

std::string fileNameOf(const std::string& path)
{
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string folderOf(const std::string& path)
{
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? std::string("/") : path.substr(0, slash);
}

std::string pathInFolder(const std::string& folder, const std::string& name)
{
    if (name.starts_with('/'))
        return name;
    std::string base = folder.empty() ? std::string(".") : folder;
    if (base.size() > 1 && base.ends_with('/'))
        base.pop_back();
    if (name.empty())
        return base;
    return base.ends_with('/') ? base + name : base + '/' + name;
}

std::string absoluteFilePath(const std::string& path)
{
    std::string joined;
    if (!path.starts_with('/')) {
        std::error_code error;
        joined = fs::current_path(error).string();
    }
    if (!path.empty() && path != ".") {
        if (!joined.empty() && !joined.ends_with('/'))
            joined += '/';
        joined += path;
    }
    if (joined == "/")
        return joined;
    const std::string clean = cleanAbsolute(joined);
    return joined.ends_with('/') && clean != "/" ? clean + '/' : clean;
}

std::string canonicalFilePath(const std::string& path)
{
    std::error_code error;
    const fs::path resolved = path.empty() ? fs::path() : fs::canonical(path, error);
    return error ? std::string() : resolved.string();
}

bool isRegularFile(const std::string& path)
{
    std::error_code error;
    return !path.empty() && fs::is_regular_file(path, error);
}

bool isFolder(const std::string& path)
{
    std::error_code error;
    return !path.empty() && fs::is_directory(path, error);
}

uint64_t fileSizeAt(const std::string& path)
{
#if defined(OOMLENS_POSIX_PATHS)
    struct stat info = {};
    return !path.empty() && ::stat(path.c_str(), &info) == 0 && info.st_size > 0 ? uint64_t(info.st_size) : 0;
#else
    std::error_code error;
    const uintmax_t size = path.empty() ? 0 : fs::file_size(path, error);
    return error ? 0 : uint64_t(size);
#endif
}

std::vector<std::string> folderEntries(const std::string& folder, bool withFolders)
{
    std::vector<std::string> names;
    std::error_code error;
    for (fs::directory_iterator it(folder.empty() ? fs::path(".") : fs::path(folder), error), end; !error && it != end;
         it.increment(error)) {
        if (listed(*it, withFolders))
            names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    std::vector<std::string> paths;
    paths.reserve(names.size());
    for (const std::string& name : names)
        paths.push_back(pathInFolder(folder, name));
    return paths;
}

} // namespace oomlens
