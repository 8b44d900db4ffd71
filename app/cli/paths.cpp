#include "app/cli/paths.h"

#include <filesystem>
#include <system_error>
#include <vector>

namespace oomlens::cli {

namespace {

// The components of an absolute path without ".", "" and what ".." takes back; a ".." above the
// root stays (QDir::cleanPath: "/a/../../b" -> "/../b").
std::string cleanAbsolute(const std::string& path)
{
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string::npos)
            end = path.size();
        const std::string part = path.substr(start, end - start);
        if (part == "..") {
            if (!parts.empty() && parts.back() != "..")
                parts.pop_back();
            else
                parts.push_back(part);
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = end + 1;
    }
    std::string clean;
    for (const std::string& part : parts)
        clean += '/' + part;
    return clean.empty() ? "/" : clean;
}

} // namespace

std::string absoluteFilePath(const std::string& path)
{
    if (path.empty())
        return {};
    std::string absolute;
    if (!path.starts_with('/')) {
        std::error_code error;
        absolute = std::filesystem::current_path(error).string();
    }
    if (path != ".") {
        if (!absolute.empty() && !absolute.ends_with('/'))
            absolute += '/';
        absolute += path;
    }
    if (absolute == "/")
        return absolute;
    // As QFileInfo::absoluteFilePath has it, even where that doubles a slash ("/a/../" -> "//").
    std::string clean = cleanAbsolute(absolute);
    if (absolute.ends_with('/'))
        clean += '/';
    return clean;
}

std::string fileName(const std::string& path)
{
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
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
    if (base.ends_with('/'))
        return base + name;
    return base + '/' + name;
}

bool isDirectory(const std::string& path)
{
    std::error_code error;
    return std::filesystem::is_directory(path, error);
}

bool existsOrIsLink(const std::string& path)
{
    std::error_code error;
    return std::filesystem::exists(std::filesystem::symlink_status(path, error));
}

bool makeFolders(const std::string& path)
{
    std::error_code error;
    std::filesystem::create_directories(path, error);
    return isDirectory(path);
}

} // namespace oomlens::cli
