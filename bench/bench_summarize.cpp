// Issue 29's two costs: `oomlens summarize` per rank (on the node where the snapshot lies: decode,
// analyze, hash, write a few KB) beside summarizing the same ranks the way `diagnose` does with no
// summary written, and the merge of many summaries on the desktop (`diagnose`'s job from
// summaries alone: read, de-duplicate, assemble, print).
//
//   bench_summarize [--ranks R] [--events E] [--summaries S] [--dir /tmp/oomlens_bench_summarize] [--keep]
//   (bench_summarize --child MODE DIR OUT is the one-mode run it starts itself, so that each mode's
//   peak RSS is its own)
//
// The R rank files are bench/synthetictrace.h's training trace (E events, two shapes), written by
// bench/rankfilewriter.h. The S summaries are the R real ones written again under S rank numbers,
// each naming a snapshot of its own (a hash of its own), one of them the rank that failed.
#include "app/cli/summarize.h"
#include "bench/processusage.h"
#include "bench/rankfilewriter.h"
#include "bench/synthetictrace.h"
#include "core/job/jobjson.h"
#include "core/job/jobtext.h"
#include "core/job/ranksummaryfile.h"
#include "opening/jobgathering.h"
#include "parsers/ranksummaryfiles.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace oomlens;
using oomlens::bench::cpuSeconds;
using oomlens::bench::peakRssMiB;

namespace {

QStringList filesIn(const QString& dir, const QString& pattern)
{
    QStringList files;
    const QDir folder(dir);
    for (const QString& name : folder.entryList({ pattern }, QDir::Files, QDir::Name))
        files.append(folder.filePath(name));
    return files;
}

// One mode in this process; prints "MODE wall_s peak_rss_mib cpu_s detail".
int runChild(const std::string& mode, const QString& dir, const QString& out)
{
    const auto start = std::chrono::steady_clock::now();
    std::string detail = "-";
    if (mode == "summarize") {
        // Exactly the command a node runs: one file at a time, as `--jobs 1`.
        const int status = cli::runSummarize({ dir.toStdString(), "-o", out.toStdString(), "--jobs", "1" });
        detail = "exit_" + std::to_string(status);
    } else if (mode == "no-summary") {
        // The same ranks summarized in memory as `diagnose` does, nothing hashed or written.
        std::vector<std::string> files;
        for (const QString& file : filesIn(dir, QStringLiteral("rank*.pickle")))
            files.push_back(file.toStdString());
        JobOptions options;
        options.maxWorkers = 1;
        const GatheredJob job = gatherJob(files, options);
        detail = "failing_" + std::to_string(job.summary.failing() ? job.summary.failing()->rank : -1);
    } else if (mode == "merge") {
        std::vector<std::string> files;
        for (const QString& file : filesIn(out, QStringLiteral("*.oomlens-summary.json")))
            files.push_back(file.toStdString());
        const GatheredJob job = gatherJob(files);
        // What `diagnose` then prints of the job, text and JSON.
        const size_t printed = jobToText(job.summary).size() + jobToJson(job.summary).dump().size();
        detail = std::to_string(job.summary.ranks.size()) + "_ranks_failing_"
            + std::to_string(job.summary.failing() ? job.summary.failing()->rank : -1) + "_printed_"
            + std::to_string(printed / 1024) + "KiB";
    } else {
        return 2;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s %.3f %.1f %.3f %s\n", mode.c_str(), seconds, peakRssMiB(), cpuSeconds(), detail.c_str());
    return 0;
}

// S summaries from the R real ones: rank i is real summary i % R under rank number i, naming a
// snapshot of its own; the rank that failed stays the only OOM.
size_t writeManySummaries(const QString& from, const QString& to, size_t count)
{
    std::vector<SummarizedRank> real;
    for (const QString& file : filesIn(from, QStringLiteral("*.oomlens-summary.json"))) {
        RankSummaryRead read = readRankSummaryFile(file.toStdString());
        if (read.summary)
            real.push_back(std::move(*read.summary));
    }
    if (real.empty())
        return 0;
    QDir().mkpath(to);
    bool failingWritten = false;
    for (size_t i = 0; i < count; ++i) {
        SummarizedRank summary = real[i % real.size()];
        if (summary.rank.oom && failingWritten) {
            summary.rank.oom = false;
            summary.rank.oomTimeUs.reset();
        }
        failingWritten = failingWritten || summary.rank.oom;
        summary.rank.rank = static_cast<int>(i);
        summary.rank.rankFromName = static_cast<int>(i);
        summary.rank.rankSource = RankSource::FileName;
        summary.snapshot.path = "/cluster/job/rank" + std::to_string(i) + ".pickle";
        summary.snapshot.hash = i;
        const std::string text = summarizedRankToJson(summary);
        QFile file(QDir(to).filePath(QStringLiteral("rank%1.oomlens-summary.json").arg(i)));
        if (!file.open(QIODevice::WriteOnly))
            return i;
        file.write(text.data(), static_cast<qint64>(text.size()));
    }
    return count;
}

std::optional<QStringList> runMode(const QString& mode, const QString& dir, const QString& out)
{
    QProcess child;
    child.start(QCoreApplication::applicationFilePath(), { QStringLiteral("--child"), mode, dir, out });
    if (!child.waitForFinished(-1) || child.exitStatus() != QProcess::NormalExit || child.exitCode() != 0) {
        std::fprintf(stderr, "bench_summarize: the %s run failed: %s\n", qPrintable(mode),
            child.readAllStandardError().constData());
        return std::nullopt;
    }
    // `summarize` prints its own line first; the mode's figures are the last line.
    const QStringList lines = QString::fromUtf8(child.readAllStandardOutput()).trimmed().split(QLatin1Char('\n'));
    const QStringList fields = lines.last().split(QLatin1Char(' '));
    if (fields.size() != 5)
        return std::nullopt;
    return fields;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    if (argc == 5 && std::strcmp(argv[1], "--child") == 0)
        return runChild(argv[2], QString::fromLocal8Bit(argv[3]), QString::fromLocal8Bit(argv[4]));

    size_t ranks = 8;
    size_t events = 400'000;
    size_t summaries = 10'000;
    QString dir = QStringLiteral("/tmp/oomlens_bench_summarize");
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--ranks" && i + 1 < argc)
            ranks = std::stoul(argv[++i]);
        else if (arg == "--events" && i + 1 < argc)
            events = std::stoul(argv[++i]);
        else if (arg == "--summaries" && i + 1 < argc)
            summaries = std::stoul(argv[++i]);
        else if (arg == "--dir" && i + 1 < argc)
            dir = QString::fromLocal8Bit(argv[++i]);
        else if (arg == "--keep")
            keep = true;
        else {
            std::fprintf(
                stderr, "usage: bench_summarize [--ranks R] [--events E] [--summaries S] [--dir DIR] [--keep]\n");
            return 2;
        }
    }

    const QString rankDir = dir + QStringLiteral("/ranks");
    const QString summaryDir = dir + QStringLiteral("/summaries");
    const QString manyDir = dir + QStringLiteral("/many");
    QDir().mkpath(rankDir);
    {
        const auto uniform = bench::syntheticTrainingTrace(events, bench::StepShape::Uniform);
        const auto varying = bench::syntheticTrainingTrace(events, bench::StepShape::Varying);
        for (size_t r = 0; r < ranks; ++r) {
            const QString path = QDir(rankDir).filePath(QStringLiteral("rank%1.pickle").arg(r));
            if (QFileInfo::exists(path) && keep)
                continue;
            bench::writeRankFile(path.toStdString(), r % 2 == 0 ? *uniform : *varying, r == ranks / 2 + 1);
        }
    }
    qint64 bytes = 0;
    for (const QString& file : filesIn(rankDir, QStringLiteral("rank*.pickle")))
        bytes += QFileInfo(file).size();
    std::printf("%zu rank files of %zu+ events, %.1f MB each; %u cores\n", ranks, events,
        static_cast<double>(bytes) / 1e6 / static_cast<double>(ranks), std::thread::hardware_concurrency());
    double load[1] = { 0 };
    if (getloadavg(load, 1) == 1)
        std::printf("load average before the runs: %.2f\n", load[0]);

    std::printf("%-11s %8s %10s %8s %14s  %s\n", "mode", "wall s", "s per rank", "CPU s", "peak RSS MiB", "detail");
    const auto show = [](const QStringList& fields, size_t count) {
        std::printf("%-11s %8s %10.3f %8s %14s  %s\n", qPrintable(fields[0]), qPrintable(fields[1]),
            fields[1].toDouble() / static_cast<double>(count), qPrintable(fields[3]), qPrintable(fields[2]),
            qPrintable(fields[4]));
        std::fflush(stdout);
    };
    // Interleaved twice: on a shared machine one run alone says little.
    for (int round = 0; round < 2; ++round) {
        for (const QString& mode : { QStringLiteral("no-summary"), QStringLiteral("summarize") }) {
            const std::optional<QStringList> fields = runMode(mode, rankDir, summaryDir);
            if (!fields)
                return 1;
            show(*fields, ranks);
        }
    }

    if (writeManySummaries(summaryDir, manyDir, summaries) != summaries) {
        std::fprintf(stderr, "bench_summarize: cannot write %zu summaries into %s\n", summaries, qPrintable(manyDir));
        return 1;
    }
    qint64 summaryBytes = 0;
    for (const QString& file : filesIn(manyDir, QStringLiteral("*.oomlens-summary.json")))
        summaryBytes += QFileInfo(file).size();
    std::printf("%zu summaries, %.1f KB each on average\n", summaries,
        static_cast<double>(summaryBytes) / 1e3 / static_cast<double>(summaries));
    for (int round = 0; round < 3; ++round) {
        const std::optional<QStringList> fields = runMode(QStringLiteral("merge"), rankDir, manyDir);
        if (!fields)
            return 1;
        show(*fields, summaries);
    }
    if (!keep)
        QDir(dir).removeRecursively();
    return 0;
}
