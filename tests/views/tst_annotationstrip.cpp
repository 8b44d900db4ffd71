#include "common/tracebuilder.h"
#include "views/plots/annotationstrip.h"
#include "views/plots/timelinedata.h"
#include "views/timelinewidget.h"

#include <QTest>

using namespace oomlens;

// The snapshot's named spans on the app's timeline: drawn as bars, named in the hover.
class TestAnnotationStrip : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // record_function ranges appear on the timeline as labelled bars, and the hover names the
    // spans the pointer is in, outermost first.
    void annotationSpansAreDrawnAndNamed()
    {
        std::string error;
        const auto snapshot = test::buildSnapshot("annotate ProfilerStep#1 stage=START\n"
                                                  "alloc x 64MiB fwd\n"
                                                  "annotate Optimizer.step#AdamW.step stage=START\n"
                                                  "alloc s 64MiB opt\n"
                                                  "annotate Optimizer.step#AdamW.step stage=END\n"
                                                  "annotate ProfilerStep#1 stage=END\n"
                                                  "alloc y 64MiB fwd\n",
            &error);
        QVERIFY2(snapshot, error.c_str());
        const auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
        auto data = std::make_shared<const TimelineData>(analysis, 0);
        QCOMPARE(data->annotationSpans().size(), size_t(2));
        TimelineWidget widget;
        widget.resize(900, 400);
        widget.setTimeline(data);
        widget.show();
        QVERIFY(QTest::qWaitForWindowExposed(&widget));
        QList<AnnotationStrip*> strips = widget.findChildren<AnnotationStrip*>();
        if (strips.isEmpty()) { // items are owned by the plot, not parented as QObjects everywhere
            for (QObject* child : widget.findChildren<QObject*>())
                if (auto* strip = qobject_cast<AnnotationStrip*>(child))
                    strips << strip;
        }
        QCOMPARE(strips.size(), 1);
        QCOMPARE(strips.front()->barCount(), size_t(2));
        int64_t optimizerEvent = -1;
        for (const AnnotationSpan& span : data->annotationSpans()) {
            if (span.depth == 1)
                optimizerEvent = span.lastEvent;
        }
        QVERIFY(optimizerEvent >= 0);
        const QString hover = widget.describe(optimizerEvent, -1);
        QVERIFY2(hover.contains(QStringLiteral("in ProfilerStep#1 › AdamW.step")), qPrintable(hover));
        const QString outside = widget.describe(data->eventCount() - 1, -1);
        QVERIFY(!outside.contains(QStringLiteral("ProfilerStep#1")));
    }
};

QTEST_MAIN(TestAnnotationStrip)
#include "tst_annotationstrip.moc"
