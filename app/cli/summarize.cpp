#include "app/cli/summarize.h"

#include "app/cli/commandline.h"
#include "app/cli/qtlists.h"
#include "core/job/jobsummarizer.h"
#include "core/job/ranksummaryfile.h"
#include "opening/jobgathering.h"
#include "parsers/ranksummaryfiles.h"
#include "parsers/snapshotfiles.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QSaveFile>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

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
std::optional<Shard> parseShard(const QString& text)
{
    const QStringList parts = text.split(QLatin1Char('/'));
    if (parts.size() != 2)
        return std::nullopt;
    bool indexOk = false;
    bool countOk = false;
    const Shard shard { parts[0].toInt(&indexOk), parts[1].toInt(&countOk) };
    if (!indexOk || !countOk || shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
        return std::nullopt;
    return shard;
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
QStringList snapshotInputs(const QStringList& paths, int& failures)
{
    QStringList files;
    for (const QString& path : paths) {
        if (!QFileInfo(path).isDir()) {
            files.append(path);
            continue;
        }
        const QStringList snapshots = toQStringList(snapshotFilesInFolder(path.toStdString()));
        if (snapshots.isEmpty()) {
            std::fprintf(stderr, "oomlens: %s: no snapshot files in the folder\n", qPrintable(path));
            ++failures;
        }
        files.append(snapshots);
    }
    files.sort();
    files.removeDuplicates();
    return files;
}

// The snapshot's name without its container's extensions: rank3.pickle.gz -> rank3.
QString stem(const QString& path)
{
    QString name = QFileInfo(path).fileName();
    if (name.endsWith(QLatin1String(".gz")))
        name.chop(3);
    const qsizetype dot = name.lastIndexOf(QLatin1Char('.'));
    return dot > 0 ? name.left(dot) : name;
}

// Each file's summary name, NAME.oomlens-summary.json, unique over the whole list (so shards never
// write over each other): a name that several snapshots share (logs/rank_3/snapshot.pickle,
// logs/rank_4/snapshot.pickle) takes its folders' names in front until it is unique
// (rank_3-snapshot).
QStringList summaryNames(const QStringList& files)
{
    std::vector<QStringList> folders; // innermost first
    QStringList names;
    for (const QString& file : files) {
        QStringList parts = QFileInfo(file).absoluteFilePath().split(QLatin1Char('/'), Qt::SkipEmptyParts);
        parts.removeLast();
        std::reverse(parts.begin(), parts.end());
        folders.push_back(parts);
        names.append(stem(file));
    }
    std::vector<qsizetype> depth(static_cast<size_t>(files.size()), 0);
    for (bool changed = true; changed;) {
        changed = false;
        QHash<QString, int> uses;
        for (const QString& name : std::as_const(names))
            ++uses[name];
        for (qsizetype i = 0; i < names.size(); ++i) {
            auto& level = depth[static_cast<size_t>(i)];
            const QStringList& up = folders[static_cast<size_t>(i)];
            if (uses.value(names[i]) > 1 && level < up.size()) {
                names[i] = up[level] + QLatin1Char('-') + names[i];
                ++level;
                changed = true;
            }
        }
    }
    // Two inputs naming one file by different paths: numbered rather than overwritten.
    QHash<QString, int> seen;
    for (QString& name : names) {
        if (const int before = seen[name]++; before > 0)
            name += QLatin1Char('-') + QString::number(before);
    }
    for (QString& name : names)
        name += QString::fromUtf8(rankSummarySuffix.data(), static_cast<qsizetype>(rankSummarySuffix.size()));
    return names;
}

bool writeSummary(const QString& path, const std::string& text, QString& error)
{
    // QSaveFile: a shard killed mid-write leaves the old summary or none, never half of one.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)
        || file.write(text.data(), static_cast<qint64>(text.size())) != static_cast<qint64>(text.size())
        || !file.commit()) {
        error = file.errorString();
        return false;
    }
    return true;
}

} // namespace

int runSummarize(const QStringList& arguments)
{
    CommandLine commandLine("summarize INPUT... -o DIR [--shard I/N] [--jobs N] [--device N] [--rules FILE]",
        QStringLiteral("Writes one small NAME.oomlens-summary.json per rank snapshot: what the job summary needs "
                       "of the rank. Run it where the snapshots are; give the summaries to diagnose, report or the "
                       "app's Job tab in place of the snapshots."));
    QCommandLineParser& parser = commandLine.parser();
    const QCommandLineOption output({ QStringLiteral("o"), QStringLiteral("output") },
        QStringLiteral("Write the summaries into DIR (made when missing)."), QStringLiteral("DIR"));
    const QCommandLineOption shard(QStringLiteral("shard"),
        QStringLiteral("Summarize only every N-th file of the sorted list, starting at I (0 <= I < N): "
                       "--shard $SLURM_PROCID/$SLURM_NTASKS."),
        QStringLiteral("I/N"));
    const QCommandLineOption jobs(QStringLiteral("jobs"),
        QStringLiteral("Snapshots decoded at once, each held in memory (default: the CPUs this process may use)."),
        QStringLiteral("N"));
    const QCommandLineOption device(QStringLiteral("device"),
        QStringLiteral("Describe snapshot device N (default: the device of the OOM event)."), QStringLiteral("N"));
    const QCommandLineOption rules(QStringLiteral("rules"),
        QStringLiteral("Category rules (JSON or YAML; first match wins)."), QStringLiteral("FILE"));
    parser.addOptions({ output, shard, jobs, device, rules });
    parser.addPositionalArgument(QStringLiteral("INPUT"),
        QStringLiteral("Rank snapshot files, or folders holding them."), QStringLiteral("INPUT..."));
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;

    AnalysisOptions analysis;
    if (!commandLine.readDevice(device, analysis.device))
        return 2;
    if (const std::optional<int> stop = commandLine.readRules(rules, analysis))
        return *stop;
    const std::string rulesPath = parser.value(rules).toStdString();
    const QString outputDir = parser.value(output);
    if (outputDir.isEmpty())
        return commandLine.usageError(QStringLiteral("no output folder: add -o DIR"));
    Shard part;
    if (parser.isSet(shard)) {
        const std::optional<Shard> parsed = parseShard(parser.value(shard));
        if (!parsed)
            return commandLine.usageError(
                QStringLiteral("--shard needs I/N with 0 <= I < N, got '%1'").arg(parser.value(shard)));
        part = *parsed;
    }
    size_t workers = usableCpus();
    if (parser.isSet(jobs)) {
        bool ok = false;
        const int value = parser.value(jobs).toInt(&ok);
        if (!ok || value < 1)
            return commandLine.usageError(
                QStringLiteral("--jobs needs a number of 1 or more, got '%1'").arg(parser.value(jobs)));
        workers = static_cast<size_t>(value);
    }
    const QStringList positional = parser.positionalArguments();
    if (positional.isEmpty())
        return commandLine.usageError(QStringLiteral("no INPUT given"));
    if (positional.contains(QStringLiteral("-")))
        return commandLine.usageError(QStringLiteral("summarize reads snapshot files, not standard input"));

    int failures = 0;
    const QStringList all = snapshotInputs(positional, failures);
    const QStringList names = summaryNames(all);
    std::vector<std::string> mine;
    QStringList mineNames;
    for (qsizetype i = part.index; i < all.size(); i += part.count) {
        // Recorded absolute: on the desktop, "copy /scratch/job/logs/rank6.pickle" says where it is.
        mine.push_back(QFileInfo(all[i]).absoluteFilePath().toStdString());
        mineNames.append(names[i]);
    }
    if (!QDir().mkpath(outputDir)) {
        std::fprintf(stderr, "oomlens: cannot create the folder %s\n", qPrintable(outputDir));
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
        const QString path = QDir(outputDir).filePath(mineNames[static_cast<qsizetype>(index)]);
        QString error;
        const bool written = writeSummary(path, summarizedRankToJson(summary), error);
        const std::lock_guard lock(printing);
        if (!rank.readable()) {
            ++unreadable;
            std::fprintf(stderr, "oomlens: %s: %s\n", rank.file.c_str(), rank.error.c_str());
        }
        if (!written) {
            ++unwritten;
            std::fprintf(stderr, "oomlens: cannot write %s: %s\n", qPrintable(path), qPrintable(error));
        }
    };
    summarizeRankFiles(mine, loadRankFile, options);

    const QString shardText
        = part.count > 1 ? QStringLiteral(" (shard %1/%2)").arg(part.index).arg(part.count) : QString();
    std::printf("summarized %zu of %lld rank files%s into %s: %zu read, %d unreadable\n", mine.size(),
        static_cast<long long>(all.size()), qPrintable(shardText), qPrintable(outputDir),
        mine.size() - static_cast<size_t>(unreadable.load()), unreadable.load());
    std::fflush(stdout);
    failures += unreadable + unwritten;
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
