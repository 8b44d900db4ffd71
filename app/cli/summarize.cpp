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

struct SummarizeFlags
{
    Option output { { "o", "output" }, "Write the summaries into DIR (made when missing).", "DIR" };
    Option shard { "shard",
        "Summarize only every N-th file of the sorted list, starting at I (0 <= I < N): "
        "--shard $SLURM_PROCID/$SLURM_NTASKS.",
        "I/N" };
    Option jobs { "jobs", "Snapshots decoded at once, each held in memory (default: the CPUs this process may use).",
        "N" };
    Option device { "device", "Describe snapshot device N (default: the device of the OOM event).", "N" };
    Option rules { "rules", "Category rules (JSON or YAML; first match wins).", "FILE" };
};

struct SummarizeRun
{
    AnalysisOptions analysis;
    std::string rulesPath;
    std::string outputDir;
    Shard part;
    size_t workers = 1;
};

// --shard and --jobs; the exit status when one is wrong.
std::optional<int> readShardAndJobs(const CommandLine& commandLine, const SummarizeFlags& flags, SummarizeRun& run)
{
    const OptionParser& parser = commandLine.parser();
    if (parser.isSet(flags.shard)) {
        const std::optional<Shard> parsed = parseShard(parser.value(flags.shard));
        if (!parsed)
            return commandLine.usageError("--shard needs I/N with 0 <= I < N, got '" + parser.value(flags.shard) + "'");
        run.part = *parsed;
    }
    run.workers = usableCpus();
    if (parser.isSet(flags.jobs)) {
        const std::optional<int> value = intFromText(parser.value(flags.jobs));
        if (!value || *value < 1)
            return commandLine.usageError("--jobs needs a number of 1 or more, got '" + parser.value(flags.jobs) + "'");
        run.workers = static_cast<size_t>(*value);
    }
    return std::nullopt;
}

// The options after a successful parse; the exit status when one is wrong.
std::optional<int> readRun(const CommandLine& commandLine, const SummarizeFlags& flags, SummarizeRun& run)
{
    const OptionParser& parser = commandLine.parser();
    if (!commandLine.readDevice(flags.device, run.analysis.device))
        return 2;
    if (const std::optional<int> stop = commandLine.readRules(flags.rules, run.analysis))
        return stop;
    run.rulesPath = parser.value(flags.rules);
    run.outputDir = parser.value(flags.output);
    if (run.outputDir.empty())
        return commandLine.usageError("no output folder: add -o DIR");
    if (const std::optional<int> stop = readShardAndJobs(commandLine, flags, run))
        return stop;
    const std::vector<std::string>& positional = parser.positionalArguments();
    if (positional.empty())
        return commandLine.usageError("no INPUT given");
    if (std::find(positional.begin(), positional.end(), "-") != positional.end())
        return commandLine.usageError("summarize reads snapshot files, not standard input");
    return std::nullopt;
}

struct SummarizeCounts
{
    int unreadable = 0;
    int unwritten = 0;
};

// This shard's ranks summarized by the worker pool, each summary written as its rank is done.
SummarizeCounts summarizeRanks(const SummarizeRun& run, const std::vector<RankToSummarize>& mine)
{
    std::mutex printing;
    std::atomic_int unreadable { 0 };
    std::atomic_int unwritten { 0 };
    JobOptions options;
    options.analysis = run.analysis;
    options.maxWorkers = run.workers;
    options.rankDone = [&](size_t index, const RankSummary& rank) {
        SummarizedRank summary;
        summary.rank = rank;
        summary.oomlensVersion = OOMLENS_VERSION;
        summary.device = run.analysis.device;
        summary.rules = run.rulesPath;
        std::string error;
        const std::string path = writeRankSummary(run.outputDir, mine[index].summaryName, std::move(summary), error);
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
    return { unreadable.load(), unwritten.load() };
}

} // namespace

int runSummarize(const std::vector<std::string>& arguments)
{
    CommandLine commandLine("summarize INPUT... -o DIR [--shard I/N] [--jobs N] [--device N] [--rules FILE]",
        "Writes one small NAME.oomlens-summary.json per rank snapshot: what the job summary needs of the rank. Run "
        "it where the snapshots are; give the summaries to diagnose, report or the app's Job tab in place of the "
        "snapshots.");
    const SummarizeFlags flags;
    OptionParser& parser = commandLine.parser();
    parser.addOptions({ flags.output, flags.shard, flags.jobs, flags.device, flags.rules });
    parser.addPositionalArgument("INPUT", "Rank snapshot files, or folders holding them.", "INPUT...");
    SummarizeRun run;
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;
    if (const std::optional<int> stop = readRun(commandLine, flags, run))
        return *stop;

    const SummaryInputs all = summaryInputs(parser.positionalArguments());
    for (const InputFailure& failure : all.failures)
        printErrorLine(failureLine(failure, FailureReader::CommandLine));
    std::vector<RankToSummarize> mine;
    for (size_t i = static_cast<size_t>(run.part.index); i < all.ranks.size(); i += static_cast<size_t>(run.part.count))
        mine.push_back(all.ranks[i]);
    if (!makeFolders(run.outputDir)) {
        std::fprintf(stderr, "oomlens: cannot create the folder %s\n", run.outputDir.c_str());
        return 1;
    }
    const SummarizeCounts counts = summarizeRanks(run, mine);
    const std::string shardText = run.part.count > 1
        ? " (shard " + std::to_string(run.part.index) + "/" + std::to_string(run.part.count) + ")"
        : std::string();
    std::printf("summarized %zu of %lld rank files%s into %s: %zu read, %d unreadable\n", mine.size(),
        static_cast<long long>(all.ranks.size()), shardText.c_str(), run.outputDir.c_str(),
        mine.size() - static_cast<size_t>(counts.unreadable), counts.unreadable);
    std::fflush(stdout);
    const int failures = static_cast<int>(all.failures.size()) + counts.unreadable + counts.unwritten;
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
