// Opening a snapshot file end to end, stage by stage, as the app does it: read the file, decode
// it (native decoder), analyzeSnapshot (reconstruction, phases, categories, peak, OOM state),
// the timeline's series (what the app's timeline view needs before its first paint: read +
// decode + analyze + series is the time to the timeline), then the diagnosis analyzeCase runs
// on it. Prints wall time and peak RSS per stage, side by
// side with CPython's pickle.load of the same file.
//
//   bench_open FILE [--runs N] [--read sized|stream|mmap] [--oom] [--python /usr/bin/python3] [--skip-python]
//   (bench_open --child MODE OOM FILE is the one-open mode it runs itself, once per run, so that
//   every run's peak RSS is its own)
//
// Built with the GUI, it then opens the file N more times the way the app does, through
// views/caseloader.h's CaseLoader::load (the timeline's data built beside the diagnosis): the
// time until the timeline is handed to the window, and until the case is complete (`app`;
// bench_open --child-app FILE is one such open).
//
// --read picks how the file reaches memory: `sized` (default) one read into a buffer of the
// file's size; `stream` the way parsers/inputloader.cpp's addFile reads today (ostringstream
// << rdbuf(), which grows its buffer as it goes); `mmap` maps the file read-only.
// --oom appends an oom event to the primary trace after decoding (gen_snapshot.py files have
// none, and without one the diagnosis has nothing to do): a request of twice the peak reserved
// bytes from the last allocation's stack.
#include "bench/processusage.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "parsers/snapshotreader.h"

#ifdef OOMLENS_BENCH_WITH_VIEWS
#include "views/caseloader.h"
#endif

#include <QCoreApplication>
#include <QFileInfo>
#include <QProcess>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace oomlens;
using oomlens::bench::currentRssMiB;
using oomlens::bench::peakRssMiB;

namespace {

const char* const stages[] = { "read", "decode", "analyze", "series", "diagnose" };
// The stages before the app's first paint of the timeline (views/caseloader.h's TimelineFirst).
constexpr size_t timelineStages = 4;

double cpuMs()
{
    return oomlens::bench::cpuSeconds() * 1e3;
}

std::string loadAverage()
{
    std::ifstream file("/proc/loadavg");
    std::string one, five, fifteen;
    file >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

// The file's bytes, read the chosen way; unmaps a mapping when it goes.
class FileBytes
{
public:
    bool load(const char* path, const std::string& mode)
    {
        if (mode == "mmap") {
            const int fd = ::open(path, O_RDONLY);
            struct stat st
            {
            };
            if (fd < 0 || fstat(fd, &st) != 0) {
                if (fd >= 0)
                    ::close(fd);
                return false;
            }
            m_size = static_cast<size_t>(st.st_size);
            void* map = m_size ? mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : nullptr;
            ::close(fd);
            if (map == MAP_FAILED)
                return false;
            m_map = static_cast<const char*>(map);
            return true;
        }
        if (mode == "stream") {
            std::ifstream file(path, std::ios::binary);
            if (!file)
                return false;
            std::ostringstream buffer;
            buffer << file.rdbuf();
            m_buffer = std::move(buffer).str();
            return true;
        }
        std::ifstream file(path, std::ios::binary | std::ios::ate);
        if (!file)
            return false;
        m_buffer.resize(static_cast<size_t>(file.tellg()));
        file.seekg(0);
        file.read(m_buffer.data(), static_cast<std::streamsize>(m_buffer.size()));
        return true;
    }

    std::string_view view() const { return m_map ? std::string_view(m_map, m_size) : std::string_view(m_buffer); }

    void release()
    {
        if (m_map)
            munmap(const_cast<char*>(m_map), m_size);
        m_map = nullptr;
        std::string().swap(m_buffer);
    }

    ~FileBytes() { release(); }

private:
    std::string m_buffer;
    const char* m_map = nullptr;
    size_t m_size = 0;
};

// The decoded snapshot is built mutable and only shared as const, so this edit is defined.
void appendOom(const std::shared_ptr<const Snapshot>& shared)
{
    auto snapshot = std::const_pointer_cast<Snapshot>(shared);
    DeviceTrace* longest = nullptr;
    for (DeviceTrace& t : snapshot->traces) {
        if (!longest || t.events.size() > longest->events.size())
            longest = &t;
    }
    if (!longest || longest->events.empty())
        return;
    uint64_t reserved = 0;
    for (const Segment& s : snapshot->segments)
        reserved += s.device == longest->device ? s.totalSize : 0;
    TraceEvent oom;
    oom.action = TraceAction::Oom;
    oom.size = std::max<uint64_t>(2 * reserved, uint64_t(1) << 30);
    oom.addr = uint64_t(512) << 20; // device_free
    oom.timeUs = longest->events.back().timeUs + 1;
    for (auto it = longest->events.rbegin(); it != longest->events.rend(); ++it) {
        if (it->action == TraceAction::Alloc) {
            oom.stack = it->stack;
            oom.stream = it->stream;
            break;
        }
    }
    longest->events.push_back(oom);
}

int runChild(const std::string& mode, bool withOom, const char* path)
{
    using Clock = std::chrono::steady_clock;
    const auto ms = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const double baseline = currentRssMiB();
    struct Stage
    {
        double ms = 0;
        double cpuMs = 0;
        double peakRssMiB = 0;
    };
    std::vector<Stage> measured;
    double cpu = cpuMs();
    auto done = [&](Clock::time_point from, Clock::time_point to) {
        const double now = cpuMs();
        measured.push_back({ ms(from, to), now - cpu, peakRssMiB() });
        cpu = now;
    };

    auto t0 = Clock::now();
    FileBytes bytes;
    if (!bytes.load(path, mode)) {
        std::fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    auto t1 = Clock::now();
    done(t0, t1);

    SnapshotReadResult read = readSnapshot(bytes.view());
    auto t2 = Clock::now();
    done(t1, t2);
    if (!read.snapshot) {
        std::fprintf(stderr, "%s: %s\n", path, read.error.c_str());
        return 1;
    }
    // The app keeps the decoded snapshot, not the file's bytes.
    bytes.release();
    if (withOom)
        appendOom(read.snapshot);

    const SnapshotAnalysis analysis = analyzeSnapshot(read.snapshot);
    auto t3 = Clock::now();
    done(t2, t3);

    std::optional<TimelineSeries> series;
    if (const DeviceAnalysis* primary = analysis.primary())
        series.emplace(*primary);
    auto tSeries = Clock::now();
    done(t3, tSeries);

    const std::vector<Diagnosis> diagnoses = diagnoseSnapshot(analysis, SnapshotDiagnosisContext {});
    auto t4 = Clock::now();
    done(tSeries, t4);

    double totalCpu = 0;
    for (const Stage& stage : measured)
        totalCpu += stage.cpuMs;
    std::printf("events=%zu total=%.1f total_cpu=%.1f baseline=%.1f diagnoses=%zu", read.snapshot->totalTraceEvents(),
        ms(t0, t4), totalCpu, baseline, diagnoses.size());
    for (size_t i = 0; i < measured.size(); ++i)
        std::printf(" %s=%.1f %s_cpu=%.1f %s_rss=%.1f", stages[i], measured[i].ms, stages[i], measured[i].cpuMs,
            stages[i], measured[i].peakRssMiB);
    std::printf("\n");
    return 0;
}

#ifdef OOMLENS_BENCH_WITH_VIEWS
// One open as the app does it, timeline first (CaseLoader stages every snapshot of a million
// events or more; this stages any).
int runAppChild(const char* path)
{
    using Clock = std::chrono::steady_clock;
    const auto ms = [](Clock::time_point a, Clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
    };
    const auto start = Clock::now();
    double toTimeline = -1;
    double toTimelineCpu = -1;
    const std::atomic_bool cancel { false };
    // The loader's own progress steps: reading and decoding end at "Analyzing…" (900), the
    // analysis at "Diagnosing…" (950), when the timeline and the diagnosis start side by side.
    double toAnalysis = -1;
    double toDiagnosis = -1;
    const auto progress = [&](int permille, const QString&) {
        if (permille == 900 && toAnalysis < 0)
            toAnalysis = ms(start, Clock::now());
        if (permille == 950 && toDiagnosis < 0)
            toDiagnosis = ms(start, Clock::now());
    };
    const LoadOutcome outcome = CaseLoader::load(
        nullptr, { LoadRequest::file(path) }, QStringLiteral("bench"), cancel, progress, {},
        [&](const TimelineFirst&) {
            toTimeline = ms(start, Clock::now());
            toTimelineCpu = cpuMs();
        },
        0);
    const auto end = Clock::now();
    if (!outcome.loaded) {
        std::fprintf(stderr, "%s: %s\n", path, qPrintable(outcome.errors.join(QStringLiteral("; "))));
        return 1;
    }
    std::printf("read_decode=%.1f analyze=%.1f to_timeline=%.1f to_timeline_cpu=%.1f total=%.1f total_cpu=%.1f "
                "rss=%.1f diagnoses=%zu\n",
        toAnalysis, toDiagnosis - toAnalysis, toTimeline, toTimelineCpu, ms(start, end), cpuMs(), peakRssMiB(),
        outcome.loaded->analysis.diagnoses.size());
    return 0;
}
#endif

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
    if (argc == 5 && std::string(argv[1]) == "--child")
        return runChild(argv[2], std::string(argv[3]) == "oom", argv[4]);
#ifdef OOMLENS_BENCH_WITH_VIEWS
    if (argc == 3 && std::string(argv[1]) == "--child-app")
        return runAppChild(argv[2]);
#endif

    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments().mid(1);
    QString python = QStringLiteral("/usr/bin/python3");
    QString file;
    QString readMode = QStringLiteral("sized");
    int runs = 3;
    bool skipPython = false;
    bool withOom = false;
    for (int i = 0; i < args.size(); ++i) {
        if (args[i] == QLatin1String("--python") && i + 1 < args.size())
            python = args[++i];
        else if (args[i] == QLatin1String("--runs") && i + 1 < args.size())
            runs = std::max(1, args[++i].toInt());
        else if (args[i] == QLatin1String("--read") && i + 1 < args.size())
            readMode = args[++i];
        else if (args[i] == QLatin1String("--oom"))
            withOom = true;
        else if (args[i] == QLatin1String("--skip-python"))
            skipPython = true;
        else
            file = args[i];
    }
    if (file.isEmpty()) {
        std::fprintf(stderr,
            "usage: bench_open SNAPSHOT [--runs N] [--read sized|stream|mmap] [--oom] [--python PATH] "
            "[--skip-python]\n");
        return 2;
    }

    const double fileMiB = static_cast<double>(QFileInfo(file).size()) / (1024.0 * 1024.0);
    std::printf("file: %s (%.1f MiB), read: %s, load average before: %s\n", qPrintable(file), fileMiB,
        qPrintable(readMode), loadAverage().c_str());
    std::vector<Fields> results;
    for (int r = 0; r < runs; ++r) {
        Fields fields;
        QString error;
        if (!runProcess(app.applicationFilePath(),
                { QStringLiteral("--child"), readMode, withOom ? QStringLiteral("oom") : QStringLiteral("no-oom"),
                    file },
                &fields, &error)) {
            std::fprintf(stderr, "open failed: %s\n", qPrintable(error));
            return 1;
        }
        results.push_back(fields);
    }
    const double events = results.front()[QStringLiteral("events")];
    std::printf("%.0f trace events%s, %d runs (best / median), diagnoses: %.0f\n", events,
        withOom ? " (an oom event appended)" : "", runs, results.front()[QStringLiteral("diagnoses")]);
    std::printf("%-10s %10s %10s %14s %16s\n", "stage", "best ms", "median ms", "median CPU ms", "peak RSS MiB");
    auto column = [&](const QString& key) {
        std::vector<double> values;
        for (Fields& f : results)
            values.push_back(f[key]);
        return values;
    };
    for (const char* stage : stages) {
        const QString key = QString::fromLatin1(stage);
        const auto times = column(key);
        std::printf("%-10s %10.1f %10.1f %14.1f %16.1f\n", stage, *std::min_element(times.begin(), times.end()),
            median(times), median(column(key + QStringLiteral("_cpu"))), median(column(key + QStringLiteral("_rss"))));
    }
    double toTimeline = 0, toTimelineCpu = 0;
    for (size_t i = 0; i < timelineStages; ++i) {
        toTimeline += median(column(QString::fromLatin1(stages[i])));
        toTimelineCpu += median(column(QString::fromLatin1(stages[i]) + QStringLiteral("_cpu")));
    }
    std::printf("%-10s %10s %10.1f %14.1f\n", "to-timeline", "", toTimeline, toTimelineCpu);
    const auto totals = column(QStringLiteral("total"));
    const double peak = median(column(QStringLiteral("diagnose_rss")));
    std::printf("%-10s %10.1f %10.1f %14.1f %16.1f\n", "total", *std::min_element(totals.begin(), totals.end()),
        median(totals), median(column(QStringLiteral("total_cpu"))), peak);
    const double budget = fileMiB + 100.0 * events / (1024.0 * 1024.0);
    std::printf("peak RSS %.1f MiB vs budget (file + 100 B/event) %.1f MiB: %s\n", peak, budget,
        peak <= budget ? "within" : "OVER");

#ifdef OOMLENS_BENCH_WITH_VIEWS
    std::vector<Fields> opens;
    for (int r = 0; r < runs; ++r) {
        Fields fields;
        QString error;
        if (!runProcess(app.applicationFilePath(), { QStringLiteral("--child-app"), file }, &fields, &error)) {
            std::fprintf(stderr, "app open failed: %s\n", qPrintable(error));
            return 1;
        }
        opens.push_back(fields);
    }
    auto appColumn = [&](const QString& key) {
        std::vector<double> values;
        for (Fields& f : opens)
            values.push_back(f[key]);
        return values;
    };
    const auto appTimeline = appColumn(QStringLiteral("to_timeline"));
    const auto appTotal = appColumn(QStringLiteral("total"));
    std::printf("as the app opens it (CaseLoader::load, %d runs, diagnoses: %.0f): read and decode %.1f ms, analysis "
                "%.1f ms (medians), to timeline %.1f / %.1f ms (best / median, %.1f ms CPU), whole open %.1f / %.1f ms "
                "(%.1f ms CPU), "
                "peak RSS %.1f MiB\n",
        runs, opens.front()[QStringLiteral("diagnoses")], median(appColumn(QStringLiteral("read_decode"))),
        median(appColumn(QStringLiteral("analyze"))), *std::min_element(appTimeline.begin(), appTimeline.end()),
        median(appTimeline), median(appColumn(QStringLiteral("to_timeline_cpu"))),
        *std::min_element(appTotal.begin(), appTotal.end()), median(appTotal),
        median(appColumn(QStringLiteral("total_cpu"))), median(appColumn(QStringLiteral("rss"))));
#endif

    if (!skipPython) {
        Fields reference;
        QString error;
        if (runProcess(python, { QStringLiteral("-c"), QString::fromUtf8(pickleLoadScript), file }, &reference, &error))
            std::printf("CPython pickle.load: %.1f ms, peak RSS %.1f MiB (oomlens open: %.1fx faster)\n",
                reference[QStringLiteral("total")], reference[QStringLiteral("rss")],
                reference[QStringLiteral("total")] / median(totals));
        else
            std::printf("CPython pickle.load failed: %s\n", qPrintable(error));
    }
    std::printf("load average after: %s\n", loadAverage().c_str());
    return 0;
}
