#include "common/tracebuilder.h"
#include "views/plots/timelinedata.h"

#include <QTest>

#include <limits>
#include <random>
#include <sstream>

using namespace oomlens;

namespace {

std::shared_ptr<const SnapshotAnalysis> analyze(const std::string& text)
{
    std::string error;
    auto snapshot = test::buildSnapshot(text, &error);
    if (!snapshot)
        qFatal("bad fixture: %s", error.c_str());
    return std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
}

// Many small allocations with one short spike in the middle, the case averaging would hide.
std::string spikyTrace(int steps)
{
    std::ostringstream out;
    out << "before p 512MiB load\n";
    for (int i = 0; i < steps; ++i) {
        out << "alloc a" << i << " 4MiB fwd\n";
        if (i == steps / 2) {
            out << "alloc spike 3GiB fwd\n";
            out << "free spike fwd\n";
        }
        out << "free a" << i << " bwd\n";
    }
    return out.str();
}

uint64_t bruteForceAllocated(const DeviceAnalysis& device, int64_t event)
{
    uint64_t sum = 0;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.liveAfter(event))
            sum += allocation.requestedSize;
    }
    return sum;
}

} // namespace

class TestTimelineData : public QObject
{
    Q_OBJECT
private slots:
    void stackMatchesLiveAllocations()
    {
        const auto analysis = analyze(spikyTrace(300));
        const TimelineData data(analysis, 0);
        QVERIFY(data.eventCount() > 600);
        for (int64_t event = -1; event < data.eventCount(); event += 37)
            QCOMPARE(data.allocatedAt(event), bruteForceAllocated(*data.device(), event));
        QCOMPARE(data.allocatedAt(data.eventCount() - 1), bruteForceAllocated(*data.device(), data.eventCount() - 1));
    }

    void downsamplingKeepsThePeak_data()
    {
        QTest::addColumn<int>("buckets");
        QTest::newRow("1 pixel") << 1;
        QTest::newRow("7 pixels") << 7;
        QTest::newRow("640 pixels") << 640;
        QTest::newRow("more pixels than events") << 100000;
    }

    void downsamplingKeepsThePeak()
    {
        QFETCH(int, buckets);
        const auto analysis = analyze(spikyTrace(3000)); // > 1024 changes: exercises block skipping
        const TimelineData data(analysis, 0);
        const int64_t count = data.eventCount();
        std::vector<int64_t> boundaries;
        for (int i = 0; i <= buckets; ++i)
            boundaries.push_back(std::min<int64_t>(count, count * i / buckets));
        boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
        const auto points = data.downsample(boundaries);
        uint64_t plottedMax = 0, plottedMin = UINT64_MAX;
        for (size_t i = 0; i < points.size(); ++i) {
            if (i > 0)
                QVERIFY2(points[i].event >= points[i - 1].event, "points must be in event order");
            QCOMPARE(total(points[i].bytes), bruteForceAllocated(*data.device(), points[i].event));
            plottedMax = std::max(plottedMax, total(points[i].bytes));
            plottedMin = std::min(plottedMin, total(points[i].bytes));
        }
        QCOMPARE(plottedMax, data.device()->peakAllocatedBytes);
        QCOMPARE(plottedMax, uint64_t(512) * 1024 * 1024 + 4 * 1024 * 1024 + uint64_t(3) * 1024 * 1024 * 1024);
        QCOMPARE(plottedMin, uint64_t(512) * 1024 * 1024);
        QVERIFY(points.size() <= size_t(2 * buckets + 2));
    }

    void zoomedRangeStaysExact()
    {
        const auto analysis = analyze(spikyTrace(3000));
        const TimelineData data(analysis, 0);
        std::mt19937 random(7);
        for (int round = 0; round < 20; ++round) {
            const int64_t first = std::uniform_int_distribution<int64_t>(0, data.eventCount() - 2)(random);
            const int64_t last = std::uniform_int_distribution<int64_t>(first + 1, data.eventCount())(random);
            std::vector<int64_t> boundaries;
            for (int64_t b = first; b < last; b += std::max<int64_t>(1, (last - first) / 50))
                boundaries.push_back(b);
            boundaries.push_back(last);
            uint64_t expected = 0;
            for (int64_t e = first; e < last; ++e)
                expected = std::max(expected, bruteForceAllocated(*data.device(), e));
            uint64_t plotted = 0;
            for (const auto& point : data.downsample(boundaries))
                plotted = std::max(plotted, total(point.bytes));
            QCOMPARE(plotted, expected);
        }
    }

    void reservedFollowsSegments()
    {
        const auto analysis = analyze("segment s0 0x7f0000000000 20MiB large\n"
                                      "segment_alloc s1 64MiB\n"
                                      "segment_free s1\n");
        const TimelineData data(analysis, 0);
        constexpr uint64_t mib = 1024 * 1024;
        QCOMPARE(data.reservedAt(-1), 20 * mib);
        QCOMPARE(data.reservedAt(0), 84 * mib);
        QCOMPARE(data.reservedAt(1), 20 * mib);
        QCOMPARE(data.maxReserved(), 84 * mib);
        const auto points = data.reservedPoints({ 0, 1, 2 });
        QVERIFY(std::any_of(points.begin(), points.end(), [](const auto& p) { return p.bytes == 84 * mib; }));
    }

    void reservedAnchoredAtTheDump()
    {
        // The trace reserves more than the dump holds (its first segment is missing from the
        // dump): the dump-time total is the one state known for sure, so the curve ends there and
        // the older past is clamped at zero, as the analysis reconstructs it.
        auto snapshot
            = std::make_shared<Snapshot>(*test::buildSnapshot("segment_alloc s1 64MiB\nsegment_alloc s2 20MiB\n"));
        QCOMPARE(snapshot->segments.size(), size_t(2));
        snapshot->segments.erase(snapshot->segments.begin());
        const auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
        const TimelineData data(analysis, 0);
        constexpr uint64_t mib = 1024 * 1024;
        QCOMPARE(data.reservedAt(1), 20 * mib);
        QCOMPARE(data.reservedAt(0), uint64_t(0));
        QCOMPARE(data.reservedAt(-1), uint64_t(0));
        QCOMPARE(data.maxReserved(), analysis->devices.front().peakReservedBytes);
        for (int64_t event = -1; event < data.eventCount(); ++event)
            QCOMPARE(data.reservedAt(event), reservedAt(*data.device(), event));
    }

    void timeAxisMatchesARunningMaximum()
    {
        // Events without a time before the first that has one, repeated times, gaps, and
        // late-stamped entries dipping back across checkpoint boundaries: the time axis is the
        // running maximum of time_us relative to the first non-zero time, and the event at a time
        // the last one at or before it, exactly as a table of every event's time gives them.
        std::ostringstream out;
        out << "alloc early 1MiB fwd t=0\nfree early bwd t=0\n";
        int64_t t = 1000;
        for (int i = 0; i < 400; ++i) {
            t += (i % 7 == 0) ? 0 : (i % 11 == 0 ? 500 : 3);
            const int64_t stamped = (i % 45 == 44) ? t - 900 : t;
            out << "alloc a" << i << " 1MiB fwd t=" << stamped << "\nfree a" << i << " bwd t=" << t << "\n";
        }
        const auto analysis = analyze(out.str());
        const TimelineData data(analysis, 0);
        QVERIFY(data.hasTime());
        const auto& events = data.trace()->events;
        QCOMPARE(data.eventCount(), int64_t(events.size()));
        QVERIFY(data.eventCount() > 10 * DeviceAnalysis::checkpointInterval);
        QCOMPARE(events.front().timeUs, int64_t(0));
        std::vector<int64_t> table;
        int64_t first = 0;
        int64_t latest = 0;
        for (const TraceEvent& event : events) {
            if (event.timeUs != 0 && first == 0)
                first = event.timeUs;
            latest = std::max(latest, event.timeUs != 0 ? event.timeUs - first : latest);
            table.push_back(latest);
        }
        for (int64_t e = 0; e < data.eventCount(); ++e)
            QCOMPARE(data.timeOf(e), table[size_t(e)]);
        QCOMPARE(data.timeOf(-1), int64_t(0));
        QCOMPARE(data.timeOf(data.eventCount() + 5), table.back());
        for (int64_t time = -5; time <= table.back() + 5; ++time) {
            const auto after = std::upper_bound(table.begin(), table.end(), time);
            const int64_t expected = after == table.begin() ? 0 : int64_t(after - table.begin()) - 1;
            QCOMPARE(data.eventAtTime(time), expected);
        }
        QCOMPARE(data.eventAtTime(std::numeric_limits<int64_t>::max()), data.eventCount() - 1);
    }

    void emptyTraceIsHarmless()
    {
        const auto analysis = analyze("segment s0 0x7f0000000000 20MiB large\n");
        const TimelineData data(analysis, 0);
        QCOMPARE(data.eventCount(), 0);
        QVERIFY(data.downsample({ 0, 0 }).size() <= 1);
        QCOMPARE(data.allocationOfEvent(0), -1);
    }
};

QTEST_GUILESS_MAIN(TestTimelineData)
#include "tst_timelinedata.moc"
