#include "common/testutil.h"
#include "core/analysis/pinnedhostmemory.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using namespace oomlens;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

QString fixtureBase()
{
    return test::testDataDir() + QStringLiteral("/hostmemory/pinned_host");
}

nlohmann::json label()
{
    const QByteArray bytes = test::readFile(fixtureBase() + QStringLiteral(".json"));
    return nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size());
}

Case caseOf(const QString& path)
{
    Case input;
    addFile(input, path.toStdString());
    return input;
}

// The fixture without its host keys, written to `dir`.
QString withoutHost(const QTemporaryDir& dir)
{
    const QString path = dir.filePath(QStringLiteral("no_host.pickle"));
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly))
        return {};
    out.write(test::runPython(QStringLiteral("import pickle, sys\n"
                                             "d = pickle.load(open(sys.argv[1], 'rb'))\n"
                                             "del d['host_segments'], d['host_traces']\n"
                                             "sys.stdout.buffer.write(pickle.dumps(d, protocol=4))\n"),
        { fixtureBase() + QStringLiteral(".pickle") }));
    return path;
}

} // namespace

// Pinned host memory over time (core/analysis/pinnedhostmemory.h) and where it is shown:
// `diagnose --json`'s pinned_host_memory and the HTML report's own section. Host RAM never
// changes a device's figures or the diagnosis.
class TestPinnedHost : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void timelineOfTheFixture()
    {
        const Case input = caseOf(fixtureBase() + QStringLiteral(".pickle"));
        QCOMPARE(input.snapshots.size(), size_t(1));
        const auto host = pinnedHostTimeline(*input.snapshots.front());
        QVERIFY(host);
        const auto truth = label();
        QCOMPARE(host->segmentsAtDump, truth["host_segments"].get<size_t>());
        QCOMPARE(host->reservedAtDump, truth["host_reserved_bytes"].get<uint64_t>());
        QCOMPARE(host->allocatedAtDump, truth["host_allocated_bytes"].get<uint64_t>());
        QCOMPARE(host->peakReserved, truth["host_peak_reserved_bytes"].get<uint64_t>());
        QCOMPARE(host->points.size(), truth["host_trace_events"].get<size_t>() + 1);
        QCOMPARE(host->olderAllocated, uint64_t(0)); // the trace saw every block allocated
        // Staging 64 MiB, batch 1 64 MiB, batch 2 (the long one) 128 MiB: all three handed out at once.
        QCOMPARE(host->peakAllocated, 256 * MiB);
        QCOMPARE(host->allocEvents, size_t(4));
        const auto atOom = host->at(truth["oom_time_us"].get<int64_t>());
        QVERIFY(atOom);
        QCOMPARE(atOom->allocated, truth["host_allocated_at_oom_bytes"].get<uint64_t>());
        QVERIFY(!host->at(host->firstTimeUs() - 1));
    }

    // A trace whose ring buffer dropped the start: frees of blocks it never saw allocated, and
    // segments held at the dump beyond what its segment_alloc entries add up to.
    void olderThanTheTrace()
    {
        auto snapshot = std::make_shared<Snapshot>();
        PinnedHostMemory host;
        Segment old;
        old.totalSize = 64 * MiB;
        host.segments.push_back(old);
        Segment fresh;
        fresh.totalSize = 32 * MiB;
        fresh.allocatedSize = 32 * MiB;
        host.segments.push_back(fresh);
        auto event = [&](TraceAction action, uint64_t addr, uint64_t size, int64_t time) {
            TraceEvent e;
            e.action = action;
            e.addr = addr;
            e.size = size;
            e.timeUs = time;
            host.events.push_back(e);
        };
        event(TraceAction::FreeCompleted, 0x1000, 64 * MiB, 10); // allocated before the trace
        event(TraceAction::SegmentAlloc, 0x9000, 32 * MiB, 20);
        event(TraceAction::Alloc, 0x9000, 32 * MiB, 21);
        snapshot->hostMemory = std::move(host);
        const auto timeline = pinnedHostTimeline(*snapshot);
        QVERIFY(timeline);
        QCOMPARE(timeline->olderAllocated, 64 * MiB);
        QCOMPARE(timeline->olderReserved, 64 * MiB);
        QCOMPARE(timeline->points.front().allocated, 64 * MiB);
        QCOMPARE(timeline->points[1].allocated, uint64_t(0));
        QCOMPARE(timeline->points.back().allocated, 32 * MiB);
        QCOMPARE(timeline->points.back().reserved, 96 * MiB);
        QCOMPARE(timeline->peakAllocated, 64 * MiB);
        QCOMPARE(timeline->peakReserved, 96 * MiB);
        QVERIFY(!pinnedHostTimeline(Snapshot {}));
    }

    void deviceFiguresAndDiagnosisUnchanged()
    {
        QTemporaryDir dir;
        const QString plain = withoutHost(dir);
        const Case with = caseOf(fixtureBase() + QStringLiteral(".pickle"));
        const Case without = caseOf(plain);
        QCOMPARE(without.snapshots.size(), size_t(1));
        QVERIFY(!without.snapshots.front()->hostMemory);
        const CaseAnalysis a = analyzeCase(with);
        const CaseAnalysis b = analyzeCase(without);
        const DeviceAnalysis* da = a.snapshots.front().primary();
        const DeviceAnalysis* db = b.snapshots.front().primary();
        QVERIFY(da && db);
        QCOMPARE(da->peakReservedBytes, db->peakReservedBytes);
        QCOMPARE(da->peakAllocatedBytes, db->peakAllocatedBytes);
        QCOMPARE(da->ooms.size(), db->ooms.size());
        QCOMPARE(da->ooms.front().reservedBytes, db->ooms.front().reservedBytes);
        QCOMPARE(a.diagnoses.size(), b.diagnoses.size());
        for (size_t i = 0; i < a.diagnoses.size(); ++i) {
            QCOMPARE(a.diagnoses[i].id, b.diagnoses[i].id);
            QCOMPARE(a.diagnoses[i].confidence, b.diagnoses[i].confidence);
        }
        // The JSON's device figures agree too; only pinned_host_memory differs.
        auto ja = caseToJson(with, a);
        auto jb = caseToJson(without, b);
        QCOMPARE(ja["snapshots"].dump(), jb["snapshots"].dump());
        QVERIFY(jb["pinned_host_memory"][0].is_null());
    }

    void diagnoseJson()
    {
        const Case input = caseOf(fixtureBase() + QStringLiteral(".pickle"));
        const auto json = caseToJson(input, analyzeCase(input));
        QVERIFY(json.contains("pinned_host_memory"));
        const auto& host = json["pinned_host_memory"];
        QCOMPARE(host.size(), size_t(1));
        const auto truth = label();
        QCOMPARE(host[0]["segments"].get<size_t>(), truth["host_segments"].get<size_t>());
        QCOMPARE(host[0]["reserved_bytes"].get<uint64_t>(), truth["host_reserved_bytes"].get<uint64_t>());
        QCOMPARE(host[0]["allocated_bytes"].get<uint64_t>(), truth["host_allocated_bytes"].get<uint64_t>());
        QCOMPARE(host[0]["trace_events"].get<size_t>(), truth["host_trace_events"].get<size_t>());
        QCOMPARE(host[0]["peak_reserved_bytes"].get<uint64_t>(), truth["host_peak_reserved_bytes"].get<uint64_t>());
        QCOMPARE(host[0]["peak_allocated_bytes"].get<uint64_t>(), 256 * MiB);
        QCOMPARE(
            host[0]["at_oom"]["allocated_bytes"].get<uint64_t>(), truth["host_allocated_at_oom_bytes"].get<uint64_t>());
        QCOMPARE(host[0]["at_oom"]["time_us"].get<int64_t>(), truth["oom_time_us"].get<int64_t>());
    }

    void reportSection()
    {
        const Case input = caseOf(fixtureBase() + QStringLiteral(".pickle"));
        const std::string html = report::buildHtmlReport(input, analyzeCase(input));
        const size_t section = html.find("<h3 id=\"pinned-host-0\">Pinned host memory</h3>");
        QVERIFY(section != std::string::npos);
        QVERIFY(html.find("aria-label=\"Pinned host memory over time\"", section) != std::string::npos);
        QVERIFY(html.find("class=\"host-allocated\"", section) != std::string::npos);
        QVERIFY(html.find("GPU OOM", section) != std::string::npos);
        QVERIFY(html.find("256.00 MiB of host RAM in 3 segments", section) != std::string::npos);
        // Text goes through the escaper: the apostrophe is an entity, never raw markup.
        QVERIFY(
            html.find(
                "At the GPU&#39;s OOM the host allocator held 256.00 MiB pinned, 128.00 MiB of it handed out.", section)
            != std::string::npos);

        QTemporaryDir dir;
        const Case plain = caseOf(withoutHost(dir));
        QVERIFY(report::buildHtmlReport(plain, analyzeCase(plain)).find("Pinned host memory") == std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestPinnedHost)
#include "tst_pinnedhost.moc"
