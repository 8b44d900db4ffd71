// Decodes one snapshot three ways and prints them side by side: CPython's pickle.load (the
// reference everyone has), our native streaming decoder, and our embedded-Python decoder.
// Each runs in its own child process so that peak RSS belongs to one decoder only.
//
//   bench_decode FILE [--python /usr/bin/python3] [--skip-python]
//   (bench_decode --child native|python FILE is the child mode it runs itself)

#include "bench/processusage.h"
#include "parsers/snapshotreader.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QProcess>
#include <QStringList>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

using oomlens::bench::cpuSeconds;
using oomlens::bench::peakRssMiB;

namespace {

int runChild(const std::string& mode, const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", path.c_str());
        return 1;
    }
    in.seekg(0, std::ios::end);
    std::string bytes(static_cast<size_t>(in.tellg()), '\0');
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    const double baseline = peakRssMiB();
    const double cpuStart = cpuSeconds();
    oomlens::SnapshotReadOptions options;
    options.decoder = mode == "python" ? oomlens::SnapshotDecoder::Python : oomlens::SnapshotDecoder::Native;
    options.allowFallback = false;
    const auto start = std::chrono::steady_clock::now();
    const auto result = oomlens::readSnapshot(bytes, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu = cpuSeconds() - cpuStart;
    if (!result.snapshot) {
        std::fprintf(stderr, "%s\n", result.error.c_str());
        return 1;
    }
    std::printf("seconds=%.4f cpu=%.4f rss=%.1f baseline=%.1f events=%zu\n", seconds, cpu, peakRssMiB(), baseline,
        result.snapshot->totalTraceEvents());
    return 0;
}

struct Measure
{
    bool ok = false;
    double seconds = 0;
    double cpu = 0;
    double rssMiB = 0;
    double baselineMiB = 0;
    size_t events = 0;
    QString error;
};

Measure parse(QProcess& process)
{
    Measure m;
    process.waitForFinished(-1);
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    if (process.exitCode() != 0 || process.exitStatus() != QProcess::NormalExit) {
        m.error = QString::fromUtf8(process.readAllStandardError()).trimmed();
        return m;
    }
    for (const QString& field : out.trimmed().split(QLatin1Char(' '))) {
        const auto kv = field.split(QLatin1Char('='));
        if (kv.size() != 2)
            continue;
        if (kv[0] == QLatin1String("seconds"))
            m.seconds = kv[1].toDouble();
        else if (kv[0] == QLatin1String("cpu"))
            m.cpu = kv[1].toDouble();
        else if (kv[0] == QLatin1String("rss"))
            m.rssMiB = kv[1].toDouble();
        else if (kv[0] == QLatin1String("baseline"))
            m.baselineMiB = kv[1].toDouble();
        else if (kv[0] == QLatin1String("events"))
            m.events = kv[1].toULongLong();
    }
    m.ok = true;
    return m;
}

// The child reports its own time and peak RSS; the file is streamed, as users run it.
const char* pickleLoadScript = R"(
import pickle, resource, sys, time
with open(sys.argv[1], 'rb') as f:
    t = time.perf_counter()
    c = time.process_time()
    d = pickle.load(f)
    dt = time.perf_counter() - t
    dc = time.process_time() - c
n = sum(len(t) for t in d.get('device_traces', [])) if isinstance(d, dict) else 0
print('seconds=%.4f cpu=%.4f rss=%.1f baseline=0 events=%d' % (dt, dc, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, n))
)";

void row(const char* name, const Measure& m, double fileMiB, const Measure* reference)
{
    if (!m.ok) {
        std::printf("%-22s  failed: %s\n", name, qPrintable(m.error));
        return;
    }
    const QString speedup = reference && reference->ok ? QStringLiteral("%1x / %2x")
                                                             .arg(reference->seconds / m.seconds, 0, 'f', 1)
                                                             .arg(reference->cpu / m.cpu, 0, 'f', 1)
                                                       : QString();
    std::printf("%-22s %9.3f %9.3f %9.1f %12.1f %14.1f  %s\n", name, m.seconds, m.cpu, fileMiB / m.seconds, m.rssMiB,
        m.rssMiB - m.baselineMiB, qPrintable(speedup));
}

} // namespace

int main(int argc, char** argv)
{
    if (argc == 4 && std::string(argv[1]) == "--child")
        return runChild(argv[2], argv[3]);

    QCoreApplication app(argc, argv);
    QStringList args = app.arguments().mid(1);
    QString python = QStringLiteral("/usr/bin/python3");
    bool skipPython = false;
    QString file;
    for (int i = 0; i < args.size(); ++i) {
        if (args[i] == QLatin1String("--python") && i + 1 < args.size())
            python = args[++i];
        else if (args[i] == QLatin1String("--skip-python"))
            skipPython = true;
        else
            file = args[i];
    }
    if (file.isEmpty()) {
        std::fprintf(stderr, "usage: bench_decode SNAPSHOT [--python PATH] [--skip-python]\n");
        return 2;
    }
    const double fileMiB = static_cast<double>(QFileInfo(file).size()) / (1024.0 * 1024.0);

    auto child = [&](const QString& program, const QStringList& arguments) {
        QProcess process;
        process.start(program, arguments);
        return parse(process);
    };
    const Measure reference = child(python, { QStringLiteral("-c"), QString::fromUtf8(pickleLoadScript), file });
    const Measure native
        = child(app.applicationFilePath(), { QStringLiteral("--child"), QStringLiteral("native"), file });
    Measure embedded;
    if (!skipPython)
        embedded = child(app.applicationFilePath(), { QStringLiteral("--child"), QStringLiteral("python"), file });

    const size_t events = native.ok ? native.events : reference.events;
    std::printf("file: %s (%.1f MiB, %zu trace events)\n", qPrintable(file), fileMiB, events);
    std::printf("%-22s %9s %9s %9s %12s %14s  %s\n", "decoder", "wall s", "cpu s", "MiB/s", "peak RSS MiB",
        "RSS-input MiB", "speedup wall / cpu");
    row("CPython pickle.load", reference, fileMiB, nullptr);
    row("oomlens native", native, fileMiB, &reference);
    if (!skipPython)
        row("oomlens embedded Py", embedded, fileMiB, &reference);
    if (native.ok && events > 0) {
        const double budget = fileMiB + 100.0 * static_cast<double>(events) / (1024.0 * 1024.0);
        std::printf(
            "native peak RSS %.1f MiB vs budget (file + 100 B/event) %.1f MiB: %s; %.1f bytes/event above the input\n",
            native.rssMiB, budget, native.rssMiB <= budget ? "within" : "OVER",
            (native.rssMiB - native.baselineMiB) * 1024.0 * 1024.0 / static_cast<double>(events));
    }
    return native.ok ? 0 : 1;
}
