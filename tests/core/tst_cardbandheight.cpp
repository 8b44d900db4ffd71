#include "common/analysisfixtures.h"
#include "core/analysis/cardreconciliation.h"
#include "core/analysis/cardtimeline.h"
#include "core/caseanalysis.h"
#include "core/report/htmlreport.h"
#include "core/strings.h"
#include "core/units.h"

#include <QTest>

using namespace oomlens;

namespace {

// A snapshot of `trace` with a capture sidecar that gives the card's total, 16 GiB.
Case withSidecar(std::string_view trace)
{
    Case input;
    input.snapshots.push_back(test::traceSnapshot(trace));
    input.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
    CaptureSidecar sidecar;
    sidecar.totalMemoryBytes = 16 * GiB;
    sidecar.snapshotIndex = 0;
    input.sidecars.push_back(sidecar);
    return input;
}

} // namespace

// The height of the band above reserved (the rest of the card: context, libraries, other
// processes) is what the inputs say and no more (cardtimeline.h): one figure is one height over
// the whole run and says so; the trace's oom events, each with the card's free memory, make it a
// step from figure to figure, drawn nowhere before the first or after the last.
class TestCardBandHeight : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void oneFigureIsOneHeightSaidSo()
    {
        const Case input = withSidecar("alloc a 10GiB fwd\nalloc b 2GiB fwd\noom 4GiB free=1GiB fwd\n");
        const CaseAnalysis analysis = analyzeCase(input);
        const auto band = cardTimelineBand(reconcileCard(input, analysis));
        QVERIFY(band);
        QVERIFY(band->samples.empty());
        QVERIFY(contains(band->label, "one figure, drawn at that height over the whole run"));
        QCOMPARE(band->outsideAt(-1), std::optional<uint64_t>(band->outsideBytes));
        QCOMPARE(band->outsideAt(2), std::optional<uint64_t>(band->outsideBytes));
        QCOMPARE(band->maxOutside(), band->outsideBytes);
        // One oom event is the same one figure: nothing to follow.
        const DeviceAnalysis* device = analysis.snapshots.front().primary();
        QVERIFY(device);
        const CardTimelineBand followed = followOomFigures(*band, *device);
        QVERIFY(followed.samples.empty());
        QCOMPARE(followed.label, band->label);
    }

    void severalOomEventsAreFollowed()
    {
        // Caught and retried: three oom events, the card's free memory shrinking faster than
        // reserved grows (another process starting up beside this one).
        const Case input = withSidecar("alloc a 8GiB fwd\n"
                                       "oom 4GiB free=6GiB fwd\n"
                                       "alloc b 1GiB fwd\n"
                                       "oom 4GiB free=4GiB fwd\n"
                                       "alloc c 1GiB fwd\n"
                                       "oom 4GiB free=1GiB fwd\n"
                                       "free c fwd\n");
        const CaseAnalysis analysis = analyzeCase(input);
        const DeviceAnalysis* device = analysis.snapshots.front().primary();
        QVERIFY(device);
        QCOMPARE(device->ooms.size(), size_t(3));
        const auto band = cardTimelineBand(reconcileCard(input, analysis));
        QVERIFY(band);
        const CardTimelineBand followed = followOomFigures(*band, *device);
        QCOMPARE(followed.samples.size(), size_t(3));
        for (size_t i = 0; i < 3; ++i) {
            const OomAnalysis& oom = device->ooms[i];
            QCOMPARE(followed.samples[i].event, oom.eventIndex);
            QCOMPARE(followed.samples[i].outsideBytes, 16 * GiB - oom.deviceFreeBytes - oom.reservedBytes);
        }
        QVERIFY(followed.samples[0].outsideBytes < followed.samples[2].outsideBytes);
        // Nothing known before the first figure or after the last; a step in between.
        QVERIFY(!followed.outsideAt(followed.samples[0].event - 1));
        QCOMPARE(followed.outsideAt(followed.samples[0].event), followed.samples[0].outsideBytes);
        QCOMPARE(followed.outsideAt(followed.samples[1].event - 1), followed.samples[0].outsideBytes);
        QCOMPARE(followed.outsideAt(followed.samples[2].event), followed.samples[2].outsideBytes);
        QVERIFY(!followed.outsideAt(followed.samples[2].event + 1));
        QCOMPARE(followed.maxOutside(), followed.samples[2].outsideBytes);
        QVERIFY(contains(followed.label, "at 3 OOM events"));
        QVERIFY(contains(followed.label,
            formatBytes(followed.samples[0].outsideBytes) + " to " + formatBytes(followed.samples[2].outsideBytes)));
        QVERIFY(!contains(followed.label, "one figure"));

        // The report's chart and legend follow them too.
        const std::string html = report::buildHtmlReport(input, analysis);
        QVERIFY(contains(html, "class=\"rest-of-card\""));
        QVERIFY(contains(html, "Outside PyTorch at 3 OOM events"));

        // Another device's band is not this device's to follow.
        CardTimelineBand other = *band;
        other.device = 1;
        QVERIFY(followOomFigures(other, *device).samples.empty());
    }
};

QTEST_GUILESS_MAIN(TestCardBandHeight)
#include "tst_cardbandheight.moc"
