#include "opening/inputstamps.h"

#include "parsers/filepaths.h"

#include <chrono>
#include <filesystem>

namespace oomlens {

std::vector<InputStamp> stampInputs(const std::vector<std::string>& paths)
{
    namespace fs = std::filesystem;
    std::vector<InputStamp> files;
    for (const std::string& path : paths) {
        InputStamp stamp;
        stamp.path = absoluteFilePath(path);
        std::error_code error;
        const fs::file_status status = fs::status(path, error);
        if (fs::exists(status)) {
            stamp.size = fs::is_regular_file(status) ? static_cast<int64_t>(fs::file_size(path, error)) : 0;
            const fs::file_time_type modified = fs::last_write_time(path, error);
            stamp.modifiedMs
                = std::chrono::duration_cast<std::chrono::milliseconds>(modified.time_since_epoch()).count();
        }
        files.push_back(std::move(stamp));
    }
    return files;
}

bool unchanged(const std::vector<InputStamp>& stamps)
{
    std::vector<std::string> paths;
    for (const InputStamp& file : stamps)
        paths.push_back(file.path);
    return stampInputs(paths) == stamps;
}

int snapshotReadFrom(const Case& input, const std::string& path)
{
    const std::string wanted = absoluteFilePath(path);
    for (const CaseInput& in : input.inputs) {
        if (in.kind == InputKind::Snapshot && in.snapshotIndex >= 0 && absoluteFilePath(in.path) == wanted)
            return in.snapshotIndex;
    }
    return -1;
}

} // namespace oomlens
