// A job of many rank files summarized as `oomlens diagnose rank*.pickle` does it: the worker pool of
// core/job (min(cores, files) threads, each decoded snapshot dropped before the next file) against
// opening the files one by one on one thread, and, with --all-at-once, against reading every file
// into one case before analyzing (what a case of many snapshots costs without the pool).
//
//   bench_job [--ranks N] [--events E] [--dir /tmp/oomlens_bench_job] [--keep] [--all-at-once]
//   (bench_job --child MODE DIR is the one-mode run it starts itself, so that each mode's peak RSS
//   is its own)
//
// The rank files are generated first: bench/synthetictrace.h's training trace (E events; odd ranks
// the Varying shape, so the job has two kinds of rank), written as a protocol-2 pickle the way
// PyTorch's _dump_snapshot lays it out (frame lists memoized), one rank given an oom event.
#include "bench/processusage.h"
#include "bench/rankfilewriter.h"
#include "bench/synthetictrace.h"
#include "core/caseanalysis.h"
#include "core/job/jobsummarizer.h"
#include "parsers/inputloader.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QProcess>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace oomlens;
using oomlens::bench::cpuSeconds;
using oomlens::bench::peakRssMiB;

namespace {

// Reads every file once, so that each mode starts with the files in the page cache: without it the
// first mode pays the disk reads and the comparison measures the disk.
double warmPageCache(const std::vector<std::string>& files)
{
    const auto start = std::chrono::steady_clock::now();
    std::vector<char> buffer(8 << 20);
    for (const std::string& file : files) {
        std::ifstream in(file, std::ios::binary);
        while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) { }
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::string> rankFiles(const QString& dir)
{
    std::vector<std::string> files;
    const QDir folder(dir);
    for (const QString& name : folder.entryList({ QStringLiteral("rank*.pickle") }, QDir::Files, QDir::Name))
        files.push_back(folder.filePath(name).toStdString());
    return files;
}

Case loadRank(const std::string& path)
{
    Case rankCase;
    addFile(rankCase, path);
    return rankCase;
}

// One mode, in this process: prints "MODE wall_seconds peak_rss_mib failing_rank workers cpu_seconds".
int runChild(const std::string& mode, const QString& dir)
{
    const std::vector<std::string> files = rankFiles(dir);
    const auto start = std::chrono::steady_clock::now();
    std::string failing = "-";
    size_t workers = 1;
    if (mode == "all-at-once") {
        Case all;
        for (const std::string& file : files)
            addFile(all, file);
        const CaseAnalysis analysis = analyzeCase(all);
        failing = std::to_string(analysis.snapshots.size()) + "_snapshots";
    } else {
        JobOptions options;
        options.maxWorkers = mode == "pool" ? 0 : 1;
        const JobSummary job = summarizeJob(files, loadRank, options);
        workers = job.workers;
        if (const RankSummary* rank = job.failing())
            failing = std::to_string(rank->rank);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "%s %.3f %.1f %s %zu %.3f\n", mode.c_str(), seconds, peakRssMiB(), failing.c_str(), workers, cpuSeconds());
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    if (argc == 4 && std::strcmp(argv[1], "--child") == 0)
        return runChild(argv[2], QString::fromLocal8Bit(argv[3]));

    size_t ranks = 64;
    size_t events = 400'000;
    QString dir = QStringLiteral("/tmp/oomlens_bench_job");
    bool keep = false;
    bool allAtOnce = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--ranks" && i + 1 < argc)
            ranks = std::stoul(argv[++i]);
        else if (arg == "--events" && i + 1 < argc)
            events = std::stoul(argv[++i]);
        else if (arg == "--dir" && i + 1 < argc)
            dir = QString::fromLocal8Bit(argv[++i]);
        else if (arg == "--keep")
            keep = true;
        else if (arg == "--all-at-once")
            allAtOnce = true;
        else {
            std::fprintf(stderr, "usage: bench_job [--ranks N] [--events E] [--dir DIR] [--keep] [--all-at-once]\n");
            return 2;
        }
    }

    QDir().mkpath(dir);
    const auto generateStart = std::chrono::steady_clock::now();
    {
        // Two traces, written under every rank's name: the decoding work per file is what counts, and
        // building a trace takes longer than writing it.
        const auto uniform = bench::syntheticTrainingTrace(events, bench::StepShape::Uniform);
        const auto varying = bench::syntheticTrainingTrace(events, bench::StepShape::Varying);
        for (size_t r = 0; r < ranks; ++r) {
            const QString path = QDir(dir).filePath(QStringLiteral("rank%1.pickle").arg(r));
            if (QFileInfo::exists(path) && keep)
                continue;
            bench::writeRankFile(path.toStdString(), r % 2 == 0 ? *uniform : *varying, r == ranks / 2 + 1);
        }
    }
    const double generateSeconds
        = std::chrono::duration<double>(std::chrono::steady_clock::now() - generateStart).count();
    const std::vector<std::string> files = rankFiles(dir);
    uint64_t bytes = 0;
    for (const std::string& file : files)
        bytes += static_cast<uint64_t>(QFileInfo(QString::fromStdString(file)).size());
    std::printf("%zu rank files of %zu+ events, %.1f MB each (%.1f MB in all) in %s, written in %.1f s; %u cores\n",
        files.size(), events, static_cast<double>(bytes) / 1e6 / static_cast<double>(files.size()),
        static_cast<double>(bytes) / 1e6, qPrintable(dir), generateSeconds, std::thread::hardware_concurrency());

    std::vector<QString> modes { QStringLiteral("one-by-one"), QStringLiteral("pool") };
    if (allAtOnce)
        modes.push_back(QStringLiteral("all-at-once"));
    // CPU s beside wall s: on a machine busy with other work the pool cannot get both cores, and the
    // CPU time shows the work itself did not grow.
    double load[1] = { 0 };
    if (getloadavg(load, 1) == 1)
        std::printf("load average before the runs: %.2f\n", load[0]);
    std::printf("%-12s %8s %8s %8s %14s %13s\n", "mode", "workers", "wall s", "CPU s", "peak RSS MiB", "failing rank");
    for (const QString& mode : modes) {
        const double warm = warmPageCache(files);
        QProcess child;
        child.start(QCoreApplication::applicationFilePath(), { QStringLiteral("--child"), mode, dir });
        if (!child.waitForFinished(-1) || child.exitStatus() != QProcess::NormalExit || child.exitCode() != 0) {
            std::fprintf(stderr, "bench_job: the %s run failed: %s\n", qPrintable(mode),
                child.readAllStandardError().constData());
            return 1;
        }
        const QStringList fields = QString::fromUtf8(child.readAllStandardOutput()).trimmed().split(QLatin1Char(' '));
        if (fields.size() != 6)
            return 1;
        std::printf("%-12s %8s %8s %8s %14s %13s   (files read into the page cache first: %.1f s)\n",
            qPrintable(fields[0]), qPrintable(fields[4]), qPrintable(fields[1]), qPrintable(fields[5]),
            qPrintable(fields[2]), qPrintable(fields[3]), warm);
        std::fflush(stdout);
    }
    if (!keep) {
        for (const std::string& file : files)
            QFile::remove(QString::fromStdString(file));
    }
    return 0;
}
