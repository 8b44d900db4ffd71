#include "parsers/snapshotfiles.h"

#include "parsers/filepaths.h"
#include "parsers/inputfile.h"
#include "parsers/snapshotreader.h"

namespace oomlens {

bool isSnapshotFile(const std::string& path)
{
    if (!isRegularFile(path) || fileSizeAt(path) == 0)
        return false;
    // A map touches only the pages the sniffer reads (the first few, a ZIP's directory at the end).
    const InputFileBytes file = peekRegularFile(path, size_t(1) << 20);
    return file.error.empty() && looksLikeSnapshot(file.bytes);
}

std::vector<std::string> snapshotFilesInFolder(const std::string& folder)
{
    std::vector<std::string> files;
    for (std::string& file : folderEntries(folder, false)) {
        if (isSnapshotFile(file))
            files.push_back(std::move(file));
    }
    return files;
}

} // namespace oomlens
