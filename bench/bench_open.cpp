// Opening a snapshot file end to end, stage by stage, as the app does it: read the file, decode
// it (native decoder), analyzeSnapshot (reconstruction, phases, categories, peak, OOM state),
// then the diagnosis analyzeCase runs on it. Prints wall time and peak RSS per stage, side by
// side with CPython's pickle.load of the same file.
//
//   bench_open FILE [--runs N] [--python /usr/bin/python3] [--skip-python]
//   (bench_open --child FILE is the one-open mode it runs itself, once per run, so that every
//   run's peak RSS is its own)
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "parsers/snapshotreader.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QProcess>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace oomlens;

namespace {

const char* const stages[] = {"read", "decode", "analyze", "diagnose"};

double peakRssMiB()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

double currentRssMiB()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
}

std::string loadAverage()
{
    std::ifstream file("/proc/loadavg");
    std::string one, five, fifteen;
    file >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

int runChild(const char* path)
{
    using Clock = std::chrono::steady_clock;
    const auto ms = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const double baseline = currentRssMiB();
    std::vector<std::pair<double, double>> measured; // per stage: ms, peak RSS MiB after it

    auto t0 = Clock::now();
    std::string bytes;
    {
        std::ifstream file(path, std::ios::binary | std::ios::ate);
        if (!file) {
            std::fprintf(stderr, "cannot read %s\n", path);
            return 1;
        }
        bytes.resize(static_cast<size_t>(file.tellg()));
        file.seekg(0);
        file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    auto t1 = Clock::now();
    measured.emplace_back(ms(t0, t1), peakRssMiB());

    SnapshotReadResult read = readSnapshot(bytes);
    auto t2 = Clock::now();
    measured.emplace_back(ms(t1, t2), peakRssMiB());
    if (!read.snapshot) {
        std::fprintf(stderr, "%s: %s\n", path, read.error.c_str());
        return 1;
    }
    // The app keeps the decoded snapshot, not the file's bytes.
    std::string().swap(bytes);

    const SnapshotAnalysis analysis = analyzeSnapshot(read.snapshot);
    auto t3 = Clock::now();
    measured.emplace_back(ms(t2, t3), peakRssMiB());

    const std::vector<Diagnosis> diagnoses = diagnoseSnapshot(analysis, SnapshotDiagnosisContext{});
    auto t4 = Clock::now();
    measured.emplace_back(ms(t3, t4), peakRssMiB());

    std::printf("events=%zu total=%.1f baseline=%.1f diagnoses=%zu", read.snapshot->totalTraceEvents(), ms(t0, t4),
                baseline, diagnoses.size());
    for (size_t i = 0; i < measured.size(); ++i)
        std::printf(" %s=%.1f %s_rss=%.1f", stages[i], measured[i].first, stages[i], measured[i].second);
    std::printf("\n");
    return 0;
}

using Fields = std::map<QString, double>;

bool runProcess(const QString& program, const QStringList& arguments, Fields* fields, QString* error)
{
    QProcess process;
    process.start(program, arguments);
    process.waitForFinished(-1);
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        *error = QString::fromUtf8(process.readAllStandardError()).trimmed();
        return false;
    }
    for (const QString& field : QString::fromUtf8(process.readAllStandardOutput()).trimmed().split(QLatin1Char(' '))) {
        const auto kv = field.split(QLatin1Char('='));
        if (kv.size() == 2)
            (*fields)[kv[0]] = kv[1].toDouble();
    }
    return true;
}

// The child reports its own time and peak RSS; the file is streamed, as users run it.
const char* pickleLoadScript = R"(
import pickle, resource, sys, time
with open(sys.argv[1], 'rb') as f:
    t = time.perf_counter()
    d = pickle.load(f)
    dt = time.perf_counter() - t
print('total=%.1f rss=%.1f' % (dt * 1000, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))
)";

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc == 3 && std::string(argv[1]) == "--child")
        return runChild(argv[2]);

    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments().mid(1);
    QString python = QStringLiteral("/usr/bin/python3");
    QString file;
    int runs = 3;
    bool skipPython = false;
    for (int i = 0; i < args.size(); ++i) {
        if (args[i] == QLatin1String("--python") && i + 1 < args.size())
            python = args[++i];
        else if (args[i] == QLatin1String("--runs") && i + 1 < args.size())
            runs = std::max(1, args[++i].toInt());
        else if (args[i] == QLatin1String("--skip-python"))
            skipPython = true;
        else
            file = args[i];
    }
    if (file.isEmpty()) {
        std::fprintf(stderr, "usage: bench_open SNAPSHOT [--runs N] [--python PATH] [--skip-python]\n");
        return 2;
    }

    const double fileMiB = static_cast<double>(QFileInfo(file).size()) / (1024.0 * 1024.0);
    std::printf("file: %s (%.1f MiB), load average before: %s\n", qPrintable(file), fileMiB, loadAverage().c_str());
    std::vector<Fields> results;
    for (int r = 0; r < runs; ++r) {
        Fields fields;
        QString error;
        if (!runProcess(app.applicationFilePath(), {QStringLiteral("--child"), file}, &fields, &error)) {
            std::fprintf(stderr, "open failed: %s\n", qPrintable(error));
            return 1;
        }
        results.push_back(fields);
    }
    const double events = results.front()[QStringLiteral("events")];
    std::printf("%.0f trace events, %d runs (best / median)\n", events, runs);
    std::printf("%-10s %10s %10s %16s\n", "stage", "best ms", "median ms", "peak RSS MiB");
    auto column = [&](const QString& key) {
        std::vector<double> values;
        for (Fields& f : results)
            values.push_back(f[key]);
        return values;
    };
    for (const char* stage : stages) {
        const QString key = QString::fromLatin1(stage);
        const auto times = column(key);
        std::printf("%-10s %10.1f %10.1f %16.1f\n", stage, *std::min_element(times.begin(), times.end()), median(times),
                    median(column(key + QStringLiteral("_rss"))));
    }
    const auto totals = column(QStringLiteral("total"));
    const double peak = median(column(QStringLiteral("diagnose_rss")));
    std::printf("%-10s %10.1f %10.1f %16.1f\n", "total", *std::min_element(totals.begin(), totals.end()), median(totals),
                peak);
    const double budget = fileMiB + 100.0 * events / (1024.0 * 1024.0);
    std::printf("peak RSS %.1f MiB vs budget (file + 100 B/event) %.1f MiB: %s\n", peak, budget,
                peak <= budget ? "within" : "OVER");

    if (!skipPython) {
        Fields reference;
        QString error;
        if (runProcess(python, {QStringLiteral("-c"), QString::fromUtf8(pickleLoadScript), file}, &reference, &error))
            std::printf("CPython pickle.load: %.1f ms, peak RSS %.1f MiB (oomlens open: %.1fx faster)\n",
                        reference[QStringLiteral("total")], reference[QStringLiteral("rss")],
                        reference[QStringLiteral("total")] / median(totals));
        else
            std::printf("CPython pickle.load failed: %s\n", qPrintable(error));
    }
    std::printf("load average after: %s\n", loadAverage().c_str());
    return 0;
}
