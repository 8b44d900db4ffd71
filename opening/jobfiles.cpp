#include "opening/jobfiles.h"

#include "parsers/filepaths.h"
#include "parsers/ranksummaryfiles.h"
#include "parsers/sidecarreader.h"
#include "parsers/snapshotfiles.h"

#include <algorithm>
#include <set>

namespace oomlens {

namespace {

// Everything a folder holds, by name: its files and subfolders, but hidden entries and the capture
// sidecars that are read with the snapshot beside them (NAME.oomlens.json).
std::vector<std::string> entriesToRead(const std::string& folder)
{
    std::vector<std::string> entries = folderEntries(folder, true);
    std::set<std::string> sidecars;
    for (const std::string& path : entries) {
        if (isSnapshotFile(path)) {
            for (std::string& sidecar : sidecarPathsFor(path))
                sidecars.insert(std::move(sidecar));
        }
    }
    std::erase_if(entries, [&sidecars](const std::string& path) { return sidecars.count(path) > 0; });
    return entries;
}

bool contains(const std::vector<std::string>& paths, const std::string& path)
{
    return std::find(paths.begin(), paths.end(), path) != paths.end();
}

} // namespace

std::vector<std::string> expandFolders(const std::vector<std::string>& paths)
{
    std::vector<std::string> expanded;
    for (const std::string& path : paths) {
        const std::vector<std::string> entries
            = path == "-" || !isFolder(path) ? std::vector<std::string>() : entriesToRead(path);
        if (entries.empty())
            expanded.push_back(path);
        else
            expanded.insert(expanded.end(), entries.begin(), entries.end());
    }
    return expanded;
}

std::vector<std::string> jobRankFiles(const std::vector<std::string>& paths)
{
    std::vector<std::string> rankFiles;
    bool summaries = false;
    for (const std::string& path : paths) {
        if (path == "-")
            continue;
        if (isRankSummaryFile(path)) {
            summaries = true;
            rankFiles.push_back(path);
        } else if (isSnapshotFile(path)) {
            rankFiles.push_back(path);
        }
    }
    // A rank summary means nothing but as a rank of a job, even alone.
    return rankFiles.size() >= 2 || summaries ? rankFiles : std::vector<std::string>();
}

std::vector<std::string> jobFilesInFolder(const std::string& folder)
{
    std::vector<std::string> files;
    for (std::string& file : folderEntries(folder, false)) {
        if (isSnapshotFile(file) || isRankSummaryFile(file))
            files.push_back(std::move(file));
    }
    return files;
}

std::vector<std::string> besideRanks(const std::vector<std::string>& paths, const std::vector<std::string>& rankFiles)
{
    std::vector<std::string> beside;
    for (const std::string& path : paths) {
        if (!contains(rankFiles, path))
            beside.push_back(path);
    }
    return beside;
}

} // namespace oomlens
