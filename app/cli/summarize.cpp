#include "app/cli/summarize.h"

#include "app/cli/commandline.h"
#include "app/cli/errorlines.h"
#include "app/cli/paths.h"
#include "core/job/jobsummarizer.h"
#include "core/job/ranksummaryfile.h"
#include "core/numbertext.h"
#include "opening/jobgathering.h"
#include "opening/summaryfiles.h"

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

    const SummaryInputs all = summaryInputs(positional);
    for (const InputFailure& failure : all.failures)
        printErrorLine(failureLine(failure, FailureReader::CommandLine));
    int failures = static_cast<int>(all.failures.size());
    std::vector<RankToSummarize> mine;
    for (size_t i = static_cast<size_t>(part.index); i < all.ranks.size(); i += static_cast<size_t>(part.count))
        mine.push_back(all.ranks[i]);
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
        summary.oomlensVersion = OOMLENS_VERSION;
        summary.device = analysis.device;
        summary.rules = rulesPath;
        std::string error;
        const std::string path = writeRankSummary(outputDir, mine[index].summaryName, std::move(summary), error);
        const std::lock_guard lock(printing);
        if (!rank.readable()) {
            ++unreadable;
            printErrorLine(failureLine({ rank.file, rank.error, false, {} }, FailureReader::CommandLine));
        }
        if (!error.empty()) {
            ++unwritten;
            std::fprintf(stderr, "oomlens: cannot write %s: %s\n", path.c_str(), error.c_str());
        }
    };
    std::vector<std::string> snapshots;
    for (const RankToSummarize& rank : mine)
        snapshots.push_back(rank.snapshot);
    summarizeRankFiles(snapshots, loadRankFile, options);

    const std::string shardText = part.count > 1
        ? " (shard " + std::to_string(part.index) + "/" + std::to_string(part.count) + ")"
        : std::string();
    std::printf("summarized %zu of %lld rank files%s into %s: %zu read, %d unreadable\n", mine.size(),
        static_cast<long long>(all.ranks.size()), shardText.c_str(), outputDir.c_str(),
        mine.size() - static_cast<size_t>(unreadable.load()), unreadable.load());
    std::fflush(stdout);
    failures += unreadable + unwritten;
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
