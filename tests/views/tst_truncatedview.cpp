#include "common/analysisfixtures.h"
#include "common/loadedcasefixture.h"
#include "common/testutil.h"
#include "core/analysis/cardreconciliation.h"
#include "core/analysis/cardtimeline.h"
#include "core/caseanalysis.h"
#include "core/units.h"
#include "opening/analyzedcase.h"
#include "parsers/inputloader.h"
#include "views/overviewpage.h"
#include "views/plots/dumpstatepicture.h"
#include "views/plots/timelinedata.h"
#include "views/timelinewidget.h"

#include <QApplication>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

#include <map>

using namespace oomlens;

namespace {

AnalyzedCasePtr loadCase(const QString& relative)
{
    return test::loadTestCase(relative);
}

std::shared_ptr<const TimelineData> timelineOf(const AnalyzedCasePtr& loaded)
{
    const SnapshotAnalysis& snapshot = loaded->analysis.snapshots.front();
    return std::make_shared<const TimelineData>(
        std::make_shared<const SnapshotAnalysis>(snapshot), snapshot.primaryDevice);
}

QString labelsText(const QWidget& widget)
{
    QStringList texts;
    for (const QLabel* label : widget.findChildren<QLabel*>())
        texts << label->text();
    return texts.join(QLatin1Char('\n'));
}

} // namespace

// The app's side of truncated history, segments-only snapshots and the card's reconciliation:
// the overview and the timeline say what the trace saw, and what the rest of the card holds.
class TestTruncatedView : public QObject
{
    Q_OBJECT

private slots:
    void overviewCountsGhostFreesAndOlderMemory()
    {
        OverviewPage page;
        page.setCase(loadCase(QStringLiteral("history/wrapped.pickle")));
        const auto* history = page.findChild<QLabel*>(QStringLiteral("traceHistory"));
        QVERIFY(history);
        QVERIFY(history->text().contains(QStringLiteral("Truncated history")));
        QVERIFY(history->text().contains(QStringLiteral("2 frees (192.00 MiB)")));
        QVERIFY(history->text().contains(QStringLiteral("448.00 MiB")));
        QVERIFY(history->text().contains(QStringLiteral("max_entries=")));
    }

    void overviewOfACompleteTraceHasNoHistoryNote()
    {
        OverviewPage page;
        page.setCase(loadCase(QStringLiteral("sidecar/capture.pickle")));
        QVERIFY(!page.findChild<QLabel*>(QStringLiteral("traceHistory")));
    }

    void overviewOfASegmentsOnlySnapshotSaysWhatIsMissing()
    {
        OverviewPage page;
        page.setCase(loadCase(QStringLiteral("history/state_only.pickle")));
        const auto* history = page.findChild<QLabel*>(QStringLiteral("traceHistory"));
        QVERIFY(history);
        QVERIFY(history->text().contains(QStringLiteral("No allocation history")));
        QVERIFY(history->text().contains(QStringLiteral("Missing without a trace: the timeline")));
        QVERIFY(labelsText(page).contains(QStringLiteral("at the dump: 1.06 GiB allocated")));
    }

    void timelineOfASegmentsOnlySnapshotShowsNoEmptyChart()
    {
        TimelineWidget timeline;
        timeline.resize(900, 500);
        timeline.setTimeline(timelineOf(loadCase(QStringLiteral("history/state_only.pickle"))));
        timeline.show();
        QVERIFY(QTest::qWaitForWindowExposed(&timeline));
        const QCustomPlot* plot = timeline.plot();
        QVERIFY(!plot->isVisible());
        const QString text = labelsText(timeline);
        QVERIFY(text.contains(QStringLiteral("No timeline")));
        QVERIFY(text.contains(QStringLiteral("enabled='state'")));
        QVERIFY(text.contains(QStringLiteral("_record_memory_history(max_entries=100000)")));

        // A snapshot with a history brings the chart back in the same widget.
        timeline.setTimeline(timelineOf(loadCase(QStringLiteral("history/wrapped.pickle"))));
        QVERIFY(plot->isVisible());
        QVERIFY(timeline.plottedPointCount() > 0);
    }

    void timelineLegendNamesMemoryOlderThanTheTrace()
    {
        TimelineWidget timeline;
        timeline.setTimeline(timelineOf(loadCase(QStringLiteral("history/wrapped.pickle"))));
        const QString text = labelsText(timeline);
        QVERIFY(text.contains(QStringLiteral("memory older than the trace")));
        QVERIFY(text.contains(QStringLiteral("448.00 MiB")));
        // A ghost free's hover says its allocation is older than the trace (event 1: free_completed).
        QVERIFY(timeline.describe(1, -1).contains(QStringLiteral("allocated before the trace began")));
        QVERIFY(!timeline.describe(4, -1).contains(QStringLiteral("allocated before the trace began")));
    }

    void overviewReconcilesAllocatorProcessAndCard()
    {
        OverviewPage page;
        page.setCase(loadCase(QStringLiteral("history/card_oom.txt")));
        const auto* section = page.findChild<QWidget*>(QStringLiteral("cardReconciliation"));
        QVERIFY(section);
        QVERIFY(section->findChild<QLabel*>(QStringLiteral("cardBar")));
        QString outside;
        for (const QLabel* label : section->findChildren<QLabel*>()) {
            if (label->property("figure").toString() == QLatin1String("process_outside_allocator"))
                outside = label->text();
        }
        QVERIFY(outside.contains(QStringLiteral("1.50 GiB")));
        const QString text = labelsText(*section);
        QVERIFY(text.contains(QStringLiteral("PyTorch's allocator")));
        QVERIFY(text.contains(QStringLiteral("This process")));
        QVERIFY(text.contains(QStringLiteral("The card")));
        QVERIFY(text.contains(QStringLiteral("CUDA context")));
        QVERIFY(text.contains(QStringLiteral("NCCL buffers")));
    }

    // The OOM message's figures beside the snapshot's at its oom event (real H100 recording with
    // CUDA graph pools): both numbers on a row each, and a gap beyond rounding said as such.
    // Exporting the timeline of a segments-only snapshot writes the allocator state at the dump
    // with the statement of what is missing, in SVG and PNG, not an empty chart.
    void exportOfASegmentsOnlySnapshotShowsTheDump()
    {
        TimelineWidget timeline;
        timeline.resize(900, 500);
        const auto data = timelineOf(loadCase(QStringLiteral("history/state_only.pickle")));
        timeline.setTimeline(data);
        QTemporaryDir directory;
        QVERIFY(directory.isValid());
        const QString svg = directory.filePath(QStringLiteral("timeline.svg"));
        QVERIFY(timeline.exportImage(svg));
        QFile file(svg);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString drawing = QString::fromUtf8(file.readAll());
        QVERIFY(drawing.contains(QStringLiteral("No timeline: this snapshot holds no allocation history")));
        QVERIFY(drawing.contains(QStringLiteral("dumped without trace entries")));
        QVERIFY(drawing.contains(QStringLiteral("Allocator state at the dump")));
        QVERIFY(drawing.contains(QStringLiteral("1.06 GiB allocated")));

        const DumpStatePicture picture(*data, timeline.font(), timeline.palette());
        const QString png = directory.filePath(QStringLiteral("timeline.png"));
        QVERIFY(timeline.exportImage(png));
        const QImage image(png);
        QVERIFY(!image.isNull());
        QVERIFY(image.height() >= picture.height(std::max(800, timeline.width())) * 2); // drawn at 2x at least
        // Not a blank page: the bars put at least two colours besides the background.
        QSet<QRgb> seen;
        for (int y = 0; y < image.height(); y += 3) {
            for (int x = 0; x < image.width(); x += 3)
                seen.insert(image.pixel(x, y));
        }
        QVERIFY(seen.size() > 3);
    }

    // The rest of the card (context, libraries, other processes) as a band above reserved, under
    // the card's total, on the timeline of its device only.
    void timelineDrawsTheRestOfTheCard()
    {
        Case input;
        input.snapshots.push_back(test::traceSnapshot("alloc a 10GiB fwd\nalloc b 2GiB fwd\noom 4GiB free=1GiB fwd\n"));
        input.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
        CaptureSidecar sidecar;
        sidecar.totalMemoryBytes = 16 * GiB;
        sidecar.snapshotIndex = 0;
        input.sidecars.push_back(sidecar);
        CaseAnalysis analysis = analyzeCase(input);
        const auto band = cardTimelineBand(reconcileCard(input, analysis));
        QVERIFY(band);
        auto loaded = std::make_shared<const AnalyzedCase>(AnalyzedCase { input, std::move(analysis), "x" });

        TimelineWidget timeline;
        timeline.resize(900, 500);
        timeline.setCardBand(band);
        const auto data = timelineOf(loaded);
        timeline.setTimeline(data);
        timeline.show();
        QVERIFY(QTest::qWaitForWindowExposed(&timeline));
        QVERIFY(timeline.shownCardBand());
        const int64_t last = data->eventCount() - 1;
        QCOMPARE(timeline.cardBandTopAt(last), data->reservedAt(last) + band->outsideBytes);
        // The card's total is in view, the band drawn, the legend names it.
        QVERIFY(timeline.plot()->yAxis->range().upper >= double(16 * GiB));
        bool drawn = false;
        for (int i = 0; i < timeline.plot()->graphCount(); ++i) {
            const QCPGraph* graph = timeline.plot()->graph(i);
            if (graph->name() == QLatin1String("Rest of the card"))
                drawn
                    = !graph->data()->isEmpty() && graph->data()->constBegin()->value > double(band->outsideBytes) - 1;
        }
        QVERIFY(drawn);
        QVERIFY(labelsText(timeline).contains(QStringLiteral("Outside PyTorch at the OOM")));

        // Another device's band is not this timeline's.
        CardTimelineBand other = *band;
        other.device = 3;
        timeline.setCardBand(other);
        QVERIFY(!timeline.shownCardBand());
        QVERIFY(!labelsText(timeline).contains(QStringLiteral("Outside PyTorch at the OOM")));
    }

    void overviewChecksTheMessageAgainstTheSnapshot()
    {
        Case input;
        const QString dir = test::testDataDir() + QStringLiteral("/real/extra/");
        addFile(input, QString(dir + QStringLiteral("graph_pools.pickle.gz")).toStdString());
        addFile(input, QString(dir + QStringLiteral("graph_pools.oom.txt")).toStdString());
        QCOMPARE(input.text.oomMessages.size(), size_t(1));
        const auto verdicts = [](const OverviewPage& page) {
            std::map<QString, std::pair<int, bool>> result; // key -> numbers shown, agrees
            const auto* box = page.findChild<QWidget*>(QStringLiteral("oomFigureChecks"));
            if (!box)
                return result;
            for (const QLabel* label : box->findChildren<QLabel*>()) {
                const QString key = label->property("check").toString();
                if (key.isEmpty())
                    continue;
                if (label->property("agrees").isValid())
                    result[key].second = label->property("agrees").toBool();
                else
                    ++result[key].first;
            }
            return result;
        };

        OverviewPage agreeing;
        CaseAnalysis analysis = analyzeCase(input);
        agreeing.setCase(std::make_shared<const AnalyzedCase>(AnalyzedCase { input, analysis, "real" }));
        const auto same = verdicts(agreeing);
        for (const char* key : { "allocated", "reserved", "device_free", "private_pools" }) {
            QVERIFY2(same.count(QLatin1String(key)), key);
            QCOMPARE(same.at(QLatin1String(key)).first, 2); // the message's and the snapshot's
            QVERIFY2(same.at(QLatin1String(key)).second, key);
        }

        input.text.oomMessages.front().allocatedBytes = *input.text.oomMessages.front().allocatedBytes + GiB;
        analysis = analyzeCase(input);
        OverviewPage differing;
        differing.setCase(std::make_shared<const AnalyzedCase>(AnalyzedCase { input, analysis, "real" }));
        QVERIFY(!verdicts(differing).at(QStringLiteral("allocated")).second);
        QVERIFY(verdicts(differing).at(QStringLiteral("reserved")).second);
        const auto* notes = differing.findChild<QLabel*>(QStringLiteral("cardNotes"));
        QVERIFY(notes);
        QVERIFY(notes->text().contains(QStringLiteral("not the same moment")));
    }

    void overviewWithoutTheCardHasNoTable()
    {
        OverviewPage page;
        page.setCase(loadCase(QStringLiteral("history/wrapped.pickle")));
        QVERIFY(!page.findChild<QWidget*>(QStringLiteral("cardReconciliation")));
    }
};

QTEST_MAIN(TestTruncatedView)
#include "tst_truncatedview.moc"
