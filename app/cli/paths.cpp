#include "app/cli/paths.h"

#include <filesystem>
#include <system_error>

namespace oomlens::cli {

bool existsOrIsLink(const std::string& path)
{
    std::error_code error;
    return std::filesystem::exists(std::filesystem::symlink_status(path, error));
}

bool makeFolders(const std::string& path)
{
    std::error_code error;
    std::filesystem::create_directories(path, error);
    return std::filesystem::is_directory(path, error);
}

} // namespace oomlens::cli
