#include "common/analysisfixtures.h"
#include "common/tracebuilder.h"
#include "core/analysis/allocatorstate.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/units.h"

#include <QTest>

using namespace oomlens;

namespace {

// Replays requested bytes the way memory_viz's Active Memory Timeline counts them.
uint64_t replayPeak(const DeviceAnalysis& d)
{
    uint64_t level = d.initialAllocatedBytes, peak = level;
    for (size_t i = 0; i < d.eventAllocation.size(); ++i) {
        const int32_t index = d.eventAllocation[i];
        if (index < 0)
            continue;
        const Allocation& a = d.allocations[static_cast<size_t>(index)];
        if (a.allocEvent == static_cast<int64_t>(i))
            level += a.requestedSize;
        else if (a.freeEvent == static_cast<int64_t>(i))
            level -= a.requestedSize;
        peak = std::max(peak, level);
    }
    return peak;
}

} // namespace

class TestReconstruct : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void simpleIntervals()
    {
        const auto result = test::analyzeTrace(R"(
alloc a 512MiB fwd
alloc b 100MiB fwd
free a bwd
free b bwd
)");
        const DeviceAnalysis* d = result.primary();
        QVERIFY(d);
        QCOMPARE(d->allocations.size(), size_t(2));
        QCOMPARE(d->peakAllocatedBytes, 612 * MiB);
        QCOMPARE(d->allocatedAfter.back(), uint64_t(0));
        QCOMPARE(d->initialAllocatedBytes, uint64_t(0));
        QVERIFY(!d->traceTruncated);
        const Allocation& a = d->allocations[0];
        QCOMPARE(a.requestedSize, 512 * MiB);
        QVERIFY(a.allocEvent >= 0 && a.freeEvent > a.allocEvent);
        QCOMPARE(a.freeRequestedEvent, a.freeEvent - 1);
        QCOMPARE(d->peakReservedBytes, 512 * MiB + 100 * MiB);
    }

    void ringBufferTruncation()
    {
        // The program allocated p and a, then the ring buffer kept only the last 3 events:
        // free a, alloc c, snapshot. p (never touched) and a (freed in the trace) are older
        // than the trace; memory before event 0 is not zero.
        const auto result = test::analyzeTrace(R"(
alloc p 1GiB load
alloc a 256MiB fwd
free a bwd
alloc c 64MiB fwd
ringbuffer 3
)");
        const DeviceAnalysis* d = result.primary();
        QVERIFY(d->traceTruncated);
        QCOMPARE(d->initialAllocatedBytes, 1 * GiB + 256 * MiB);
        QCOMPARE(d->peakAllocatedBytes, 1 * GiB + 256 * MiB + 0); // before a's free
        QCOMPARE(d->peakEvent, int64_t(-1));
        QCOMPARE(replayPeak(*d), d->peakAllocatedBytes);
        QCOMPARE(d->allocatedAfter.back(), 1 * GiB + 64 * MiB);
        int older = 0;
        for (const auto& a : d->allocations)
            older += a.olderThanTrace();
        QCOMPARE(older, 2);
        // free_completed without its free_requested in the trace still closes the older allocation.
        QCOMPARE(d->allocations[0].allocEvent, int64_t(-1));
    }

    void addressReuse()
    {
        test::TraceBuilder builder;
        QVERIFY(builder.add("alloc a 4MiB fwd\nfree a fwd\nalloc b 4MiB fwd\n"));
        const uint64_t reused = builder.address("b");
        QVERIFY(builder.add("free b fwd\nalloc c 4MiB fwd\n"));
        const auto result = analyzeSnapshot(builder.build());
        const DeviceAnalysis* d = result.primary();
        QCOMPARE(builder.address("c"), reused);
        QCOMPARE(d->allocations.size(), size_t(3));
        for (const auto& a : d->allocations)
            QCOMPARE(a.address, reused);
        QCOMPARE(d->peakAllocatedBytes, 4 * MiB);
        QCOMPARE(d->allocations[2].freeEvent, int64_t(-1));
        // c survives to the dump: its rounded block size comes from the dump-time block.
        QCOMPARE(d->allocations[2].blockSize, 4 * MiB);
    }

    void pendingFree()
    {
        const auto result = test::analyzeTrace(R"(
alloc a 8MiB fwd stream=7
free_requested a fwd
alloc b 8MiB fwd stream=7
free_completed a fwd
)");
        const DeviceAnalysis* d = result.primary();
        const Allocation& a = d->allocations[0];
        QVERIFY(a.freeRequestedEvent >= 0);
        QVERIFY(a.freeEvent > a.freeRequestedEvent);
        // Requested bytes count until free_completed, as memory_viz does.
        QCOMPARE(d->peakAllocatedBytes, 16 * MiB);
        const AllocatorState state = allocatorStateAt(*result.snapshot, *d, a.freeRequestedEvent);
        bool sawPending = false;
        for (const auto& s : state.segments)
            for (const auto& b : s.blocks)
                sawPending |= b.pendingFree;
        QVERIFY(sawPending);
    }

    void pendingFreeAtDump()
    {
        // A block pending free at the dump whose alloc is older than the trace.
        const auto result = test::analyzeTrace(R"(
alloc a 8MiB fwd
free_requested a fwd
alloc b 1MiB fwd
ringbuffer 1
)");
        const DeviceAnalysis* d = result.primary();
        QCOMPARE(d->initialAllocatedBytes, 8 * MiB);
        QCOMPARE(d->allocatedAfter.back(), 9 * MiB);
    }

    void expandableMapUnmap()
    {
        const auto result = test::analyzeTrace(R"(
map x 0x7f1000000000 64MiB
alloc a 40MiB fwd
map x 0x7f1004000000 64MiB
free a bwd
unmap x 0x7f1004000000 64MiB
)");
        const DeviceAnalysis* d = result.primary();
        QCOMPARE(d->initialReservedBytes, uint64_t(0));
        QCOMPARE(d->reservedAfter[0], 64 * MiB);
        QCOMPARE(d->peakReservedBytes, 128 * MiB);
        QCOMPARE(d->reservedAfter.back(), 64 * MiB);
        // Both mapped ranges are one segment while mapped.
        const AllocatorState both = allocatorStateAt(*result.snapshot, *d, 2);
        QCOMPARE(both.segments.size(), size_t(1));
        QCOMPARE(both.reservedBytes, 128 * MiB);
        QCOMPARE(both.largestFreeBlock(-1, true), 128 * MiB - 40 * MiB);
    }

    void reservedWalksBackwardFromDump()
    {
        // A segment existing before the trace plus one created and freed inside it.
        const auto result = test::analyzeTrace(R"(
segment s0 0x7e0000000000 20MiB large
alloc a 4MiB fwd in=s0
segment_alloc big 1GiB
segment_free big
)");
        const DeviceAnalysis* d = result.primary();
        QCOMPARE(d->initialReservedBytes, 20 * MiB);
        QCOMPARE(d->peakReservedBytes, 20 * MiB + 1 * GiB);
        QCOMPARE(d->reservedAfter.back(), 20 * MiB);
    }

    void oomState()
    {
        const auto result = test::analyzeTrace(R"(
segment s0 0x7e0000000000 100MiB large
alloc a 30MiB fwd in=s0
alloc b 30MiB fwd in=s0
alloc c 30MiB fwd in=s0
free b fwd
oom 50MiB free=10MiB fwd
)");
        const DeviceAnalysis* d = result.primary();
        QCOMPARE(d->ooms.size(), size_t(1));
        const OomAnalysis& oom = d->ooms.front();
        QCOMPARE(oom.requestedBytes, 50 * MiB);
        QCOMPARE(oom.deviceFreeBytes, 10 * MiB);
        QCOMPARE(oom.allocatedBytes, 60 * MiB);
        QCOMPARE(oom.reservedBytes, 100 * MiB);
        // 40 MiB free in total (b's hole 30 + the 10 MiB tail) but no piece of 50 MiB.
        QCOMPARE(oom.freeInPoolBytes, 40 * MiB);
        QCOMPARE(oom.largestFreeBlock, 30 * MiB);
        QCOMPARE(oom.phase, Phase::Forward);
        uint64_t sum = 0;
        for (uint64_t v : oom.liveByCategory)
            sum += v;
        QCOMPARE(sum, oom.allocatedBytes);
    }

    void primaryDevice()
    {
        const auto result = test::analyzeTrace(R"(
alloc a 1MiB fwd
alloc b 1MiB fwd
alloc c 1MiB fwd
device 1
alloc d 1MiB fwd
oom 1GiB free=0
device 2
alloc e 1MiB fwd
)");
        QCOMPARE(result.primaryDevice, 1);
        QCOMPARE(result.devices.size(), size_t(3));
        AnalysisOptions options;
        options.device = 2;
        QCOMPARE(analyzeSnapshot(result.snapshot, options).primaryDevice, 2);
        const auto noOom = test::analyzeTrace("alloc a 1MiB fwd\ndevice 1\nalloc b 1MiB fwd\nalloc c 1MiB fwd\n");
        QCOMPARE(noOom.primaryDevice, 1);
    }

    void downsampleKeepsPeak()
    {
        std::string text;
        for (int i = 0; i < 500; ++i)
            text += "alloc t" + std::to_string(i) + " 1MiB fwd\nfree t" + std::to_string(i) + " fwd\n";
        text += "alloc spike 3GiB fwd\nfree spike fwd\n";
        for (int i = 0; i < 500; ++i)
            text += "alloc u" + std::to_string(i) + " 2MiB fwd\nfree u" + std::to_string(i) + " fwd\n";
        const auto result = test::analyzeTrace(text.c_str());
        const DeviceAnalysis* d = result.primary();
        const auto n = static_cast<int64_t>(d->eventAllocation.size());
        const TimelineSeries series(*d);
        const std::vector<int64_t> boundaries = TimelineSeries::evenBoundaries(0, n, 37);
        QCOMPARE(boundaries.size(), size_t(38));
        QCOMPARE(boundaries.front(), int64_t(0));
        QCOMPARE(boundaries.back(), n);
        const auto points = series.downsample(boundaries);
        uint64_t best = 0;
        for (const auto& point : points) {
            best = std::max(best, point.total());
            // The series' categories add up to the replay's own per-event total.
            QCOMPARE(point.total(), d->allocatedAfter[static_cast<size_t>(point.event)]);
        }
        QCOMPARE(best, d->peakAllocatedBytes);
        QCOMPARE(series.maxAllocated(), d->peakAllocatedBytes);
        QCOMPARE(d->peakAllocatedBytes, 3 * GiB);
    }
};

QTEST_GUILESS_MAIN(TestReconstruct)
#include "tst_reconstruct.moc"
