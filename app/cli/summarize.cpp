#include "app/cli/summarize.h"

#include "app/cli/atomicfile.h"
#include "app/cli/commandline.h"
#include "app/cli/numbertext.h"
#include "app/cli/paths.h"
#include "core/job/jobsummarizer.h"
#include "core/job/ranksummaryfile.h"
#include "opening/jobgathering.h"
#include "parsers/filepaths.h"
#include "parsers/ranksummaryfiles.h"
#include "parsers/snapshotfiles.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace oomlens::cli {

namespace {

struct Shard
{
    int index = 0;
    int count = 1;
};

// "I/N" with 0 <= I < N: SLURM_PROCID and SLURM_ARRAY_TASK_ID (of --array=0-N-1) count from 0.
std::optional<Shard> parseShard(const std::string& text)
{
    const size_t slash = text.find('/');
    if (slash == std::string::npos || text.find('/', slash + 1) != std::string::npos)
        return std::nullopt;
    const std::optional<int> index = intFromText(std::string_view(text).substr(0, slash));
    const std::optional<int> count = intFromText(std::string_view(text).substr(slash + 1));
    if (!index || !count || *count < 1 || *index < 0 || *index >= *count)
        return std::nullopt;
    return Shard { *index, *count };
}

// The CPUs this process may run on: a Slurm task bound to 8 of a node's 128 cores gets 8 workers,
// not 128 (each worker holds one decoded snapshot).
size_t usableCpus()
{
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return static_cast<size_t>(CPU_COUNT(&set));
#endif
    return std::max<size_t>(1, std::thread::hardware_concurrency());
}

// Folders stand for the snapshots in them; files are taken as given (one that is not a snapshot
// gets an error entry). Sorted and without repeats: every shard must see the same list.
std::vector<std::string> snapshotInputs(const std::vector<std::string>& paths, int& failures)
{
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        if (!isFolder(path)) {
            files.push_back(path);
            continue;
        }
        const std::vector<std::string> snapshots = snapshotFilesInFolder(path);
        if (snapshots.empty()) {
            std::fprintf(stderr, "oomlens: %s: no snapshot files in the folder\n", path.c_str());
            ++failures;
        }
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

// Each file's summary name, NAME.oomlens-summary.json, unique over the whole list (so shards never
// write over each other): a name that several snapshots share (logs/rank_3/snapshot.pickle,
// logs/rank_4/snapshot.pickle) takes its folders' names in front until it is unique
// (rank_3-snapshot).
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

int runSummarize(const std::vector<std::string>& arguments)
{
    CommandLine commandLine("summarize INPUT... -o DIR [--shard I/N] [--jobs N] [--device N] [--rules FILE]",
        "Writes one small NAME.oomlens-summary.json per rank snapshot: what the job summary needs of the rank. Run "
        "it where the snapshots are; give the summaries to diagnose, report or the app's Job tab in place of the "
        "snapshots.");
    OptionParser& parser = commandLine.parser();
    const Option output({ "o", "output" }, "Write the summaries into DIR (made when missing).", "DIR");
    const Option shard("shard",
        "Summarize only every N-th file of the sorted list, starting at I (0 <= I < N): "
        "--shard $SLURM_PROCID/$SLURM_NTASKS.",
        "I/N");
    const Option jobs(
        "jobs", "Snapshots decoded at once, each held in memory (default: the CPUs this process may use).", "N");
    const Option device("device", "Describe snapshot device N (default: the device of the OOM event).", "N");
    const Option rules("rules", "Category rules (JSON or YAML; first match wins).", "FILE");
    parser.addOptions({ output, shard, jobs, device, rules });
    parser.addPositionalArgument("INPUT", "Rank snapshot files, or folders holding them.", "INPUT...");
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;

    AnalysisOptions analysis;
    if (!commandLine.readDevice(device, analysis.device))
        return 2;
    if (const std::optional<int> stop = commandLine.readRules(rules, analysis))
        return *stop;
    const std::string rulesPath = parser.value(rules);
    const std::string outputDir = parser.value(output);
    if (outputDir.empty())
        return commandLine.usageError("no output folder: add -o DIR");
    Shard part;
    if (parser.isSet(shard)) {
        const std::optional<Shard> parsed = parseShard(parser.value(shard));
        if (!parsed)
            return commandLine.usageError("--shard needs I/N with 0 <= I < N, got '" + parser.value(shard) + "'");
        part = *parsed;
    }
    size_t workers = usableCpus();
    if (parser.isSet(jobs)) {
        const std::optional<int> value = intFromText(parser.value(jobs));
        if (!value || *value < 1)
            return commandLine.usageError("--jobs needs a number of 1 or more, got '" + parser.value(jobs) + "'");
        workers = static_cast<size_t>(*value);
    }
    const std::vector<std::string>& positional = parser.positionalArguments();
    if (positional.empty())
        return commandLine.usageError("no INPUT given");
    if (std::find(positional.begin(), positional.end(), "-") != positional.end())
        return commandLine.usageError("summarize reads snapshot files, not standard input");

    int failures = 0;
    const std::vector<std::string> all = snapshotInputs(positional, failures);
    const std::vector<std::string> names = summaryNames(all);
    std::vector<std::string> mine;
    std::vector<std::string> mineNames;
    for (size_t i = static_cast<size_t>(part.index); i < all.size(); i += static_cast<size_t>(part.count)) {
        // Recorded absolute: on the desktop, "copy /scratch/job/logs/rank6.pickle" says where it is.
        mine.push_back(absoluteFilePath(all[i]));
        mineNames.push_back(names[i]);
    }
    if (!makeFolders(outputDir)) {
        std::fprintf(stderr, "oomlens: cannot create the folder %s\n", outputDir.c_str());
        return 1;
    }

    std::mutex printing;
    std::atomic_int unreadable { 0 };
    std::atomic_int unwritten { 0 };
    JobOptions options;
    options.analysis = analysis;
    options.maxWorkers = workers;
    options.rankDone = [&](size_t index, const RankSummary& rank) {
        SummarizedRank summary;
        summary.rank = rank;
        // The page cache still holds the file the worker just decoded: hashing it is a memory pass.
        summary.snapshot = identifySnapshotFile(rank.file);
        summary.oomlensVersion = OOMLENS_VERSION;
        summary.device = analysis.device;
        summary.rules = rulesPath;
        // A shard killed mid-write leaves the old summary or none, never half of one.
        const std::string path = pathInFolder(outputDir, mineNames[index]);
        std::string error;
        const bool written = writeFileAtomically(path, summarizedRankToJson(summary), error);
        const std::lock_guard lock(printing);
        if (!rank.readable()) {
            ++unreadable;
            std::fprintf(stderr, "oomlens: %s: %s\n", rank.file.c_str(), rank.error.c_str());
        }
        if (!written) {
            ++unwritten;
            std::fprintf(stderr, "oomlens: cannot write %s: %s\n", path.c_str(), error.c_str());
        }
    };
    summarizeRankFiles(mine, loadRankFile, options);

    const std::string shardText = part.count > 1
        ? " (shard " + std::to_string(part.index) + "/" + std::to_string(part.count) + ")"
        : std::string();
    std::printf("summarized %zu of %lld rank files%s into %s: %zu read, %d unreadable\n", mine.size(),
        static_cast<long long>(all.size()), shardText.c_str(), outputDir.c_str(),
        mine.size() - static_cast<size_t>(unreadable.load()), unreadable.load());
    std::fflush(stdout);
    failures += unreadable + unwritten;
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
