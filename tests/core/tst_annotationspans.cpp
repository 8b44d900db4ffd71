#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/analysis/annotationspans.h"
#include "core/analysis/series.h"
#include "core/report/charts.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <map>

using namespace oomlens;

namespace {

struct Built
{
    SnapshotAnalysis analysis;
    std::vector<AnnotationSpan> spans;
    std::map<std::string, int64_t> allocEvents; // of the names asked for
};

Built build(const std::string& text, std::initializer_list<const char*> names = {})
{
    test::TraceBuilder builder;
    if (!builder.add(text))
        qFatal("trace builder: %s", builder.error().c_str());
    Built built { analyzeSnapshot(builder.build()), {}, {} };
    for (const char* name : names)
        built.allocEvents[name] = builder.allocEvent(name);
    built.spans = annotationSpans(*built.analysis.snapshot, *built.analysis.primary());
    return built;
}

const AnnotationSpan* find(const std::vector<AnnotationSpan>& spans, std::string_view name)
{
    for (const AnnotationSpan& span : spans) {
        if (span.name == name)
            return &span;
    }
    return nullptr;
}

} // namespace

// The named spans of external_annotations: paired START/END, nesting, event ranges, the hover's
// "spans at this event", and the report's timeline drawing them.
class TestAnnotationSpans : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void pairsNestsAndMapsToEvents()
    {
        const Built built = build("annotate ProfilerStep#1 stage=START\n"
                                  "alloc x 1MiB fwd\n"
                                  "alloc y 1MiB fwd\n"
                                  "annotate Optimizer.step#AdamW.step stage=START\n"
                                  "alloc s 1MiB opt\n"
                                  "annotate Optimizer.step#AdamW.step stage=END\n"
                                  "free x bwd\n"
                                  "annotate ProfilerStep#1 stage=END\n"
                                  "annotate ProfilerStep#2 stage=START\n"
                                  "alloc z 1MiB fwd\n",
            { "x", "s", "z" });
        QCOMPARE(built.spans.size(), size_t(3));
        const AnnotationSpan* step1 = find(built.spans, "ProfilerStep#1");
        const AnnotationSpan* optimizer = find(built.spans, "Optimizer.step#AdamW.step");
        const AnnotationSpan* step2 = find(built.spans, "ProfilerStep#2");
        QVERIFY(step1 && optimizer && step2);
        QCOMPARE(step1->depth, 0);
        QCOMPARE(optimizer->depth, 1); // inside step 1
        QCOMPARE(step2->depth, 0);
        QVERIFY(step1->closed && optimizer->closed);
        QVERIFY(!step2->closed); // the dump came before its END
        // The builder adds segment events of its own, so the ranges are checked against the allocs.
        const int64_t x = built.allocEvents.at("x");
        const int64_t s = built.allocEvents.at("s");
        const int64_t z = built.allocEvents.at("z");
        QVERIFY(step1->firstEvent <= x && s <= step1->lastEvent && step1->lastEvent < z);
        QVERIFY(optimizer->firstEvent <= s && s <= optimizer->lastEvent);
        QVERIFY(optimizer->firstEvent > x && optimizer->lastEvent < step1->lastEvent); // the free of x is after
        QVERIFY(step2->firstEvent > step1->lastEvent && step2->firstEvent <= z);
        QCOMPARE(step2->lastEvent, int64_t(built.analysis.primary()->eventPhase.size()) - 1);

        const auto at = spansAt(built.spans, s);
        QCOMPARE(at.size(), size_t(2));
        QCOMPARE(at[0]->name, std::string("ProfilerStep#1")); // outermost first
        QCOMPARE(at[1]->name, std::string("Optimizer.step#AdamW.step"));
        QCOMPARE(spansAt(built.spans, z).size(), size_t(1));
    }

    void endWithoutStartIsDropped()
    {
        // The ring buffer kept the END of a range whose START it cut.
        const Built built = build("alloc x 1MiB fwd\n"
                                  "annotate validation stage=END\n"
                                  "alloc y 1MiB fwd\n");
        QVERIFY(built.spans.empty());
    }

    void labelsReadLikeTheCode()
    {
        QCOMPARE(annotationLabel("Optimizer.step#AdamW.step"), std::string_view("AdamW.step"));
        QCOMPARE(annotationLabel("ProfilerStep#3"), std::string_view("ProfilerStep#3"));
        QCOMPARE(annotationLabel("eval"), std::string_view("eval"));
        QCOMPARE(annotationLabel("trailing#"), std::string_view("trailing#"));
    }

    // The report's timeline draws the spans (with their names as tooltips and, when wide enough,
    // as labels), and keeps at most one per column and row however many steps there are.
    void reportTimelineDrawsThem()
    {
        std::string text;
        for (int step = 0; step < 3000; ++step) {
            const std::string n = std::to_string(step);
            text += "annotate ProfilerStep#" + n + " stage=START\nalloc a" + n + " 1MiB fwd\nfree a" + n
                + " bwd\nannotate ProfilerStep#" + n + " stage=END\n";
        }
        text += "annotate evaluation_loop stage=START\n";
        for (int batch = 0; batch < 200; ++batch) // outputs kept: wide enough to span many columns
            text += "alloc e" + std::to_string(batch) + " 1MiB eval\n";
        const Built built = build(text);
        const DeviceAnalysis& device = *built.analysis.primary();
        const TimelineSeries series(device);
        const report::TimelineChartData chart = report::timelineChartData(device, series, 500);
        QVERIFY(!chart.spans.empty());
        QVERIFY2(chart.spans.size() <= 501, std::to_string(chart.spans.size()).c_str());
        const std::string svg = report::timelineSvg(chart, {}, std::nullopt);
        QVERIFY(svg.find("span-bar") != std::string::npos);
        QVERIFY(svg.find("ProfilerStep#0: events") != std::string::npos);
        QVERIFY(svg.find("span-bar open") != std::string::npos); // evaluation_loop never ended
        QVERIFY(svg.find("evaluation_loop") != std::string::npos);
    }

    // A real snapshot with record_function ranges of the optimizer.
    void realSnapshotHasOptimizerSpans()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString path = test::corpusDir()
            + QStringLiteral("/snapshots/kkaitlyn111__cs336-a2-systems__memory_ctx512_fullstep_.pickle");
        Case input;
        addFile(input, path.toStdString());
        QCOMPARE(input.snapshots.size(), size_t(1));
        const SnapshotAnalysis analysis = analyzeSnapshot(input.snapshots.front());
        const auto spans = annotationSpans(*analysis.snapshot, *analysis.primary());
        const AnnotationSpan* step = find(spans, "Optimizer.step#AdamW.step");
        QVERIFY(step);
        QVERIFY(step->closed);
        QVERIFY(step->lastEvent >= step->firstEvent);
        QVERIFY(find(spans, "Optimizer.zero_grad#AdamW.zero_grad"));
    }
};

QTEST_GUILESS_MAIN(TestAnnotationSpans)
#include "tst_annotationspans.moc"
