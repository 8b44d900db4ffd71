// Times reconstruction + phases + categories (analyzeSnapshot) on a synthetic training trace
// of N events (default 1M), or on a snapshot file given as argument, and prints time and RSS.
#include "bench/synthetictrace.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"
#include "parsers/snapshotreader.h"

#include <QFile>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

using namespace oomlens;

namespace {

long rssKiB(const char* field)
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0)
            return std::stol(line.substr(std::strlen(field)));
    }
    return -1;
}

} // namespace

int main(int argc, char** argv)
{
    size_t events = 1'000'000;
    std::shared_ptr<const Snapshot> snapshot;
    if (argc > 1 && std::strspn(argv[1], "0123456789") == std::strlen(argv[1])) {
        events = std::stoul(argv[1]);
    } else if (argc > 1) {
        QFile file(QString::fromLocal8Bit(argv[1]));
        if (!file.open(QIODevice::ReadOnly)) {
            std::fprintf(stderr, "cannot read %s\n", argv[1]);
            return 1;
        }
        const QByteArray bytes = file.readAll();
        const auto result = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        if (!result.snapshot) {
            std::fprintf(stderr, "%s: %s\n", argv[1], result.error.c_str());
            return 1;
        }
        snapshot = result.snapshot;
    }
    if (!snapshot)
        snapshot = bench::syntheticTrainingTrace(events, bench::StepShape::Uniform);
    const long before = rssKiB("VmRSS:");
    const auto start = std::chrono::steady_clock::now();
    const SnapshotAnalysis analysis = analyzeSnapshot(snapshot);
    const auto analyzed = std::chrono::steady_clock::now();
    const DeviceAnalysis* d = analysis.primary();
    const auto n = static_cast<int64_t>(d ? d->eventAllocation.size() : 0);
    static const DeviceAnalysis none;
    const TimelineSeries series(d ? *d : none);
    const auto built = std::chrono::steady_clock::now();
    const auto buckets = series.downsample(TimelineSeries::evenBoundaries(0, n, 2000));
    const auto sampled = std::chrono::steady_clock::now();
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::printf("events %zu allocations %zu steps %d\n", snapshot->totalTraceEvents(), d ? d->allocations.size() : 0,
        d ? d->stepCount : 0);
    std::printf("analyze %.1f ms, timeline series %.1f ms, downsample to %zu points %.2f ms\n", ms(start, analyzed),
        ms(analyzed, built), buckets.size(), ms(built, sampled));
    std::printf("rss before %ld KiB, after %ld KiB (+%.1f bytes/event), peak %ld KiB\n", before, rssKiB("VmRSS:"),
        n ? (rssKiB("VmRSS:") - before) * 1024.0 / static_cast<double>(n) : 0.0, rssKiB("VmHWM:"));
    std::printf("peak %llu bytes at event %lld\n", static_cast<unsigned long long>(d ? d->peakAllocatedBytes : 0),
        static_cast<long long>(d ? d->peakEvent : -1));
    return 0;
}
