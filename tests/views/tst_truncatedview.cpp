#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "parsers/inputloader.h"
#include "views/loadedcase.h"
#include "views/overviewpage.h"
#include "views/timelinedata.h"
#include "views/timelinewidget.h"

#include <QApplication>
#include <QLabel>
#include <QTest>
#include <qcustomplot.h>

using namespace oomlens;

namespace {

LoadedCasePtr loadCase(const QString& relative)
{
    Case input;
    addFile(input, QString(test::testDataDir() + QLatin1Char('/') + relative).toStdString());
    CaseAnalysis analysis = analyzeCase(input);
    return std::make_shared<const LoadedCase>(LoadedCase { std::move(input), std::move(analysis), relative });
}

std::shared_ptr<const TimelineData> timelineOf(const LoadedCasePtr& loaded)
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

    void overviewWithoutTheCardHasNoTable()
    {
        OverviewPage page;
        page.setCase(loadCase(QStringLiteral("history/wrapped.pickle")));
        QVERIFY(!page.findChild<QWidget*>(QStringLiteral("cardReconciliation")));
    }
};

QTEST_MAIN(TestTruncatedView)
#include "tst_truncatedview.moc"
