#include "opening/summaryfiles.h"

#include "opening/atomicfile.h"
#include "parsers/filepaths.h"
#include "parsers/ranksummaryfiles.h"
#include "parsers/snapshotfiles.h"

#include <algorithm>
#include <unordered_map>

namespace oomlens {

namespace {

// The snapshot files named, each folder standing for the snapshots in it; sorted, without repeats.
std::vector<std::string> snapshotFiles(const std::vector<std::string>& paths, std::vector<InputFailure>& failures)
{
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        if (!isFolder(path)) {
            files.push_back(path);
            continue;
        }
        const std::vector<std::string> snapshots = snapshotFilesInFolder(path);
        if (snapshots.empty())
            failures.push_back({ path, "no snapshot files in the folder", false, {} });
        files.insert(files.end(), snapshots.begin(), snapshots.end());
    }
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
    return files;
}

// The snapshot's name without its container's extensions: rank3.pickle.gz -> rank3.
std::string stem(const std::string& path)
{
    std::string name = fileNameOf(path);
    if (name.ends_with(".gz"))
        name.resize(name.size() - 3);
    const size_t dot = name.rfind('.');
    return dot != std::string::npos && dot > 0 ? name.substr(0, dot) : name;
}

// The folders above `file`, innermost first: /scratch/job/logs/rank3.pickle -> logs, job, scratch.
std::vector<std::string> foldersAbove(const std::string& file)
{
    std::vector<std::string> parts;
    const std::string absolute = absoluteFilePath(file);
    for (size_t start = 0; start < absolute.size();) {
        const size_t end = std::min(absolute.find('/', start), absolute.size());
        if (end > start)
            parts.push_back(absolute.substr(start, end - start));
        start = end + 1;
    }
    if (!parts.empty())
        parts.pop_back(); // the file's own name
    std::reverse(parts.begin(), parts.end());
    return parts;
}

// Each file's summary name, NAME.oomlens-summary.json, unique over the whole list.
std::vector<std::string> summaryNames(const std::vector<std::string>& files)
{
    std::vector<std::vector<std::string>> folders; // innermost first
    std::vector<std::string> names;
    for (const std::string& file : files) {
        folders.push_back(foldersAbove(file));
        names.push_back(stem(file));
    }
    std::vector<size_t> depth(files.size(), 0);
    for (bool changed = true; changed;) {
        changed = false;
        std::unordered_map<std::string, int> uses;
        for (const std::string& name : names)
            ++uses[name];
        for (size_t i = 0; i < names.size(); ++i) {
            const std::vector<std::string>& up = folders[i];
            if (uses[names[i]] > 1 && depth[i] < up.size()) {
                names[i] = up[depth[i]] + '-' + names[i];
                ++depth[i];
                changed = true;
            }
        }
    }
    // Two inputs naming one file by different paths: numbered rather than overwritten.
    std::unordered_map<std::string, int> seen;
    for (std::string& name : names) {
        if (const int before = seen[name]++; before > 0)
            name += '-' + std::to_string(before);
    }
    for (std::string& name : names)
        name += rankSummarySuffix;
    return names;
}

} // namespace

SummaryInputs summaryInputs(const std::vector<std::string>& paths)
{
    SummaryInputs inputs;
    const std::vector<std::string> files = snapshotFiles(paths, inputs.failures);
    const std::vector<std::string> names = summaryNames(files);
    for (size_t i = 0; i < files.size(); ++i)
        inputs.ranks.push_back({ absoluteFilePath(files[i]), names[i] });
    return inputs;
}

std::string writeRankSummary(
    const std::string& folder, const std::string& name, SummarizedRank summary, std::string& error)
{
    summary.snapshot = identifySnapshotFile(summary.rank.file);
    const std::string path = pathInFolder(folder, name);
    if (!writeFileAtomically(path, summarizedRankToJson(summary), error) && error.empty())
        error = "cannot write the file";
    return path;
}

} // namespace oomlens
