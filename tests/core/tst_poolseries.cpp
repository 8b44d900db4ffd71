#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/analysis/allocatorstate.h"
#include "core/analysis/poolseries.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"

#include <QTest>

using namespace oomlens;

namespace {

// Two streams, both pool kinds, a segment released and one reused: every pool moves.
const char* twoStreams = R"(
alloc a 512KiB fwd
alloc b 12MiB fwd
alloc c 3MiB fwd stream=7
alloc d 600KiB fwd stream=7
alloc e 2MiB fwd
free b bwd
alloc f 4MiB bwd
free a bwd
alloc g 256KiB bwd stream=7
free c opt
alloc h 40MiB opt
free d opt
)";

const PoolSeries* find(const std::vector<PoolSeries>& all, PoolKey key)
{
    for (const PoolSeries& s : all) {
        if (s.key == key)
            return &s;
    }
    return nullptr;
}

// One column per event: each column's values must be what allocatorStateAt() says at that
// event, and the pools' reserved bytes must add up to the timeline's reserved series.
void compareWithAllocatorState(const Snapshot& snapshot, const DeviceAnalysis& d, int64_t first, int64_t last)
{
    const auto series = poolSeries(snapshot, d, first, last, int(last - first));
    const int64_t stride = std::max<int64_t>(1, (last - first) / 150);
    for (int64_t e = first; e < last; e += stride) {
        const AllocatorState state = allocatorStateAt(snapshot, d, e);
        uint64_t reserved = 0;
        for (const PoolSeries& s : series) {
            const PoolBucket& b = s.buckets[static_cast<size_t>(e - first)];
            QCOMPARE(b.firstEvent, e);
            QCOMPARE(b.minReserved, b.maxReserved);
            reserved += b.maxReserved;
            PoolState expected;
            for (const PoolState& p : state.pools()) {
                if (p.key == s.key)
                    expected = p;
            }
            QCOMPARE(b.maxReserved, expected.reservedBytes);
            QCOMPARE(b.maxActive, expected.activeBytes);
            QCOMPARE(b.largestFreeBlock, expected.largestFreeBlock);
            QCOMPARE(b.maxCached, expected.reservedBytes - std::min(expected.reservedBytes, expected.activeBytes));
        }
        QCOMPARE(reserved, reservedAt(d, e));
        QCOMPARE(reserved, state.reservedBytes);
    }
}

} // namespace

class TestPoolSeries : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void poolsAreSplitByStreamAndKind()
    {
        const auto snapshot = test::traceSnapshot(twoStreams);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis& d = *result.primary();
        const auto n = static_cast<int64_t>(d.eventAllocation.size());
        const auto series = poolSeries(*snapshot, d, 0, n, 1);
        QCOMPARE(series.size(), size_t(4));
        // Ordered by key: stream 0 small, stream 0 large, stream 7 small, stream 7 large.
        QCOMPARE(series[0].key, (PoolKey { 0, false }));
        QCOMPARE(series[3].key, (PoolKey { 7, true }));
        // One 2 MiB small segment per stream; stream 0's large pool peaks with b's 12 MiB
        // segment, a 20 MiB one for e and f, and h's 40 MiB.
        QCOMPARE(find(series, { 0, false })->maxReserved, 2 * MiB);
        QCOMPARE(find(series, { 7, false })->maxReserved, 2 * MiB);
        QCOMPARE(find(series, { 7, true })->maxReserved, 20 * MiB);
        QCOMPARE(find(series, { 0, true })->maxReserved, (12 + 20 + 40) * MiB);
        // After c is freed stream 7's large segment caches all 20 MiB.
        QCOMPARE(find(series, { 7, true })->maxCached, 20 * MiB);
    }

    void columnsMatchAllocatorState()
    {
        const auto snapshot = test::traceSnapshot(twoStreams);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis& d = *result.primary();
        const auto n = static_cast<int64_t>(d.eventAllocation.size());
        compareWithAllocatorState(*snapshot, d, 0, n);
        compareWithAllocatorState(*snapshot, d, 3, n - 2); // a window: the sweep still starts at 0
    }

    void columnsAlignWithDownsample()
    {
        const auto snapshot = test::traceSnapshot(twoStreams);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis& d = *result.primary();
        const auto n = static_cast<int64_t>(d.eventAllocation.size());
        const std::vector<int64_t> boundaries = TimelineSeries::evenBoundaries(1, n, 4);
        const size_t columns = boundaries.size() - 1;
        const auto series = poolSeries(*snapshot, d, 1, n, 4);
        QVERIFY(!series.empty());
        for (const PoolSeries& s : series) {
            QCOMPARE(s.buckets.size(), columns);
            for (size_t b = 0; b < columns; ++b) {
                QCOMPARE(s.buckets[b].firstEvent, boundaries[b]);
                QCOMPARE(s.buckets[b].lastEvent, boundaries[b + 1]);
            }
        }
        // The largest pool reserve in a column never exceeds the device's.
        for (size_t b = 0; b < columns; ++b) {
            uint64_t sum = 0;
            for (const PoolSeries& s : series)
                sum += s.buckets[b].minReserved;
            uint64_t deviceMax = 0;
            for (int64_t e = boundaries[b]; e < boundaries[b + 1]; ++e)
                deviceMax = std::max(deviceMax, reservedAt(d, e));
            QVERIFY(sum <= deviceMax);
        }
    }

    void largestFreeBlockAfterSplit()
    {
        // A 20 MiB segment with 3 MiB used at its start, then 4 MiB more: the largest free
        // block is the tail.
        const char* text = "alloc a 3MiB fwd\nalloc b 4MiB fwd\nfree a fwd\n";
        const auto snapshot = test::traceSnapshot(text);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis& d = *result.primary();
        const auto n = static_cast<int64_t>(d.eventAllocation.size());
        const auto series = poolSeries(*snapshot, d, 0, n, int(n));
        const PoolSeries* large = find(series, { 0, true });
        QVERIFY(large);
        QCOMPARE(large->buckets.back().largestFreeBlock, 13 * MiB);
        QCOMPARE(large->buckets.back().maxActive, 4 * MiB);
        const auto pools = allocatorStateAt(*snapshot, d, n - 1).pools();
        QCOMPARE(pools.size(), size_t(1));
        QCOMPARE(pools[0].largestFreeBlock, 13 * MiB);
        QCOMPARE(pools[0].freeBytes, 16 * MiB);
        QCOMPARE(pools[0].segments, size_t(1));
        // Without the block walk the columns carry no largest free block.
        QCOMPARE(find(poolSeries(*snapshot, d, 0, n, 1, false), { 0, true })->buckets[0].largestFreeBlock, uint64_t(0));
    }

    void expandableSegments()
    {
        // Large pages are 20 MiB, small ones 2 MiB; the tail page is released after b is freed
        // while a still holds the front, and the small pool grows page by page.
        const char* text = "map x 0x7f1000000000 60MiB\nalloc a 28MiB fwd in=x\nalloc b 28MiB fwd in=x\n"
                           "free b bwd\nunmap x 0x7f1002800000 20MiB\nmap y 0x7f2000000000 2MiB small\n"
                           "alloc c 1MiB fwd in=y\nmap y 0x7f2000200000 2MiB small\nalloc d 1MiB fwd in=y\n"
                           "alloc e 1MiB fwd in=y\n";
        const auto snapshot = test::traceSnapshot(text);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis& d = *result.primary();
        const auto n = static_cast<int64_t>(d.eventAllocation.size());
        compareWithAllocatorState(*snapshot, d, 0, n);
        const auto series = poolSeries(*snapshot, d, 0, n, 1);
        QCOMPARE(series.size(), size_t(2));
        QCOMPARE(find(series, { 0, false })->maxReserved, 4 * MiB);
        QCOMPARE(find(series, { 0, true })->maxReserved, 60 * MiB);
        QCOMPARE(find(series, { 0, true })->buckets[0].minReserved, 40 * MiB);
    }

    void emptyAndOutOfRange()
    {
        const auto snapshot = test::traceSnapshot(twoStreams);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis& d = *result.primary();
        QVERIFY(poolSeries(*snapshot, d, 5, 5, 10).empty());
        QVERIFY(poolSeries(*snapshot, d, 0, 10, 0).empty());
        const auto clamped = poolSeries(*snapshot, d, -50, 1'000'000, 3);
        QVERIFY(!clamped.empty());
        QCOMPARE(clamped.front().buckets.back().lastEvent, int64_t(d.eventAllocation.size()));
    }

    void realSnapshots_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("segment frees") << "MercuryB1__SQAttn__cuda_memory_snapshot.pickle";
        QTest::newRow("lightning") << "Nesta-gitU__discrete_diffusion__memory_snapshot.json";
        QTest::newRow("expandable, 3 GPUs") << "Constructor-Sun__code_location__memory_snapshot.pickle";
    }

    void realSnapshots()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, file);
        const QByteArray bytes = test::readFile(test::corpusDir() + QStringLiteral("/snapshots/") + file);
        const auto read = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        if (!read.snapshot)
            QSKIP("the snapshot decoder is not available in this build");
        const auto result = analyzeSnapshot(read.snapshot);
        for (const DeviceAnalysis& d : result.devices)
            compareWithAllocatorState(*read.snapshot, d, 0, static_cast<int64_t>(d.eventAllocation.size()));
    }

    void eventAtTime_data()
    {
        QTest::addColumn<QList<qint64>>("times");
        QTest::addColumn<qint64>("query");
        QTest::addColumn<qint64>("expected");
        const QList<qint64> sorted { 10, 20, 20, 30, 40 };
        QTest::newRow("before all") << sorted << qint64(5) << qint64(0);
        QTest::newRow("exact") << sorted << qint64(20) << qint64(1);
        QTest::newRow("between") << sorted << qint64(25) << qint64(3);
        QTest::newRow("last") << sorted << qint64(40) << qint64(4);
        QTest::newRow("after all") << sorted << qint64(41) << qint64(5);
        // time_us going backwards: the running maximum decides.
        const QList<qint64> jitter { 10, 30, 25, 28, 31, 40 };
        QTest::newRow("jitter, inside a dip") << jitter << qint64(27) << qint64(1);
        QTest::newRow("jitter, after the dip") << jitter << qint64(31) << qint64(4);
    }

    void eventAtTime()
    {
        QFETCH(QList<qint64>, times);
        QFETCH(qint64, query);
        QFETCH(qint64, expected);
        DeviceTrace trace;
        for (qint64 t : times) {
            TraceEvent e;
            e.action = TraceAction::Snapshot;
            e.timeUs = t;
            trace.events.push_back(e);
        }
        DeviceAnalysis d;
        buildTimeCheckpoints(&trace, d);
        QCOMPARE(oomlens::eventAtTime(d, trace, query), expected);
    }

    void eventAtTimeAcrossCheckpoints()
    {
        // Long enough for several checkpoints, with a dip that crosses a checkpoint boundary;
        // compared with a plain running-maximum scan at every time.
        DeviceTrace trace;
        const int64_t interval = DeviceAnalysis::checkpointInterval;
        const int64_t n = 50 * interval + interval / 2 + 1;
        for (int64_t i = 0; i < n; ++i) {
            TraceEvent e;
            // Dips of 37 events, so they start and end inside checkpoint intervals.
            e.timeUs = i * 10 + ((i / 37) % 2 ? -3000 : 0);
            trace.events.push_back(e);
        }
        DeviceAnalysis d;
        buildTimeCheckpoints(&trace, d);
        QCOMPARE(d.timeCheckpoints.size(), size_t(51));
        auto scan = [&](int64_t t) {
            int64_t runningMax = INT64_MIN;
            for (int64_t i = 0; i < n; ++i) {
                runningMax = std::max(runningMax, trace.events[static_cast<size_t>(i)].timeUs);
                if (runningMax >= t)
                    return i;
            }
            return n;
        };
        for (int64_t t = -100; t <= n * 10 + 20; t += 7)
            QCOMPARE(oomlens::eventAtTime(d, trace, t), scan(t));
        // The running maximum at every event, as the timeline's time axis reads it.
        int64_t runningMax = INT64_MIN;
        for (int64_t i = 0; i < n; ++i) {
            runningMax = std::max(runningMax, trace.events[static_cast<size_t>(i)].timeUs);
            QCOMPARE(runningMaxTime(d, trace, i), runningMax);
        }
        QCOMPARE(runningMaxTime(d, trace, -1), INT64_MIN);
        QCOMPARE(runningMaxTime(d, trace, n + 3), runningMax);
        DeviceAnalysis unindexed; // built by hand, without checkpoints: scanned from the start
        QCOMPARE(runningMaxTime(unindexed, trace, n / 2), runningMaxTime(d, trace, n / 2));
        QCOMPARE(oomlens::eventAtTime(unindexed, trace, 4000), scan(4000));
    }
};

QTEST_GUILESS_MAIN(TestPoolSeries)
#include "tst_poolseries.moc"
