#include "common/analysisfixtures.h"
#include "core/analysis/annotationspans.h"
#include "core/analysis/cardtimeline.h"
#include "core/analysis/recomputespans.h"
#include "core/analysis/series.h"
#include "core/analysis/tracehistory.h"
#include "core/caseanalysis.h"
#include "core/report/charts.h"
#include "core/report/reportcontext.h"
#include "core/units.h"
#include "opening/analyzedcase.h"
#include "views/plots/timelinedata.h"

#include <QTest>

#include <algorithm>
#include <array>

using namespace oomlens;

namespace {

// Three training steps, the first entries without time_us (as eras before it write 0), time_us
// jittering backwards once, and three oom events, each with the card's free memory: the phase
// runs, step starts, time axis, trace history and the rest of the card all have something to say.
constexpr const char* run = "alloc w 2GiB load t=0\n"
                            "alloc x 1GiB fwd t=0\n"
                            "alloc y 1GiB fwd t=100\n"
                            "free y bwd t=150\n"
                            "alloc g 512MiB grad t=140\n"
                            "alloc s 256MiB optinit t=200\n"
                            "free x zero t=220\n"
                            "alloc x2 1GiB fwd t=300\n"
                            "oom 4GiB free=6GiB fwd t=310\n"
                            "alloc y2 1GiB bwd t=350\n"
                            "oom 4GiB free=4GiB bwd t=360\n"
                            "alloc t 64MiB opt t=400\n"
                            "free t opt t=410\n"
                            "alloc x3 1GiB fwd t=500\n"
                            "oom 4GiB free=1GiB fwd t=520\n";

// record_function ranges (a step with the optimizer's range nested in it, a step never closed) and
// a recompute under checkpointing's unpack hook: the spans the timelines draw.
constexpr const char* spannedRun
    = "annotate ProfilerStep#1 stage=START t=10\n"
      "alloc x 1GiB fwd t=20\n"
      "alloc r 256MiB stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
      "torch/utils/checkpoint.py:recompute_fn:1480;torch/utils/checkpoint.py:unpack_hook:1125 t=30\n"
      "free r bwd t=40\n"
      "annotate Optimizer.step#AdamW.step stage=START t=50\n"
      "alloc s 256MiB opt t=60\n"
      "annotate Optimizer.step#AdamW.step stage=END t=70\n"
      "annotate ProfilerStep#1 stage=END t=80\n"
      "annotate ProfilerStep#2 stage=START t=90\n"
      "alloc y 1GiB fwd t=100\n"
      "free y bwd t=110\n";

struct Fixture
{
    Case input;
    std::shared_ptr<const AnalyzedCase> loaded;
    const DeviceAnalysis* device = nullptr;
};

Fixture analyzedRun(const char* text = run)
{
    Fixture fixture;
    fixture.input.snapshots.push_back(test::traceSnapshot(text));
    fixture.input.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
    CaptureSidecar sidecar;
    sidecar.totalMemoryBytes = 16 * GiB;
    sidecar.snapshotIndex = 0;
    fixture.input.sidecars.push_back(sidecar);
    fixture.loaded
        = std::make_shared<const AnalyzedCase>(AnalyzedCase { fixture.input, analyzeCase(fixture.input), "run" });
    fixture.device = fixture.loaded->analysis.snapshots.front().primary();
    return fixture;
}

std::shared_ptr<const SnapshotAnalysis> snapshotOf(const Fixture& fixture)
{
    return std::shared_ptr<const SnapshotAnalysis>(fixture.loaded, &fixture.loaded->analysis.snapshots.front());
}

// The runs as the timeline view derived them from the per-event phases before the analysis held
// them: maximal runs of one known phase.
std::vector<PhaseRun> runsFromEvents(const DeviceAnalysis& device)
{
    std::vector<PhaseRun> runs;
    for (size_t i = 0; i < device.eventPhase.size(); ++i) {
        const auto event = int64_t(i);
        if (!runs.empty() && runs.back().phase == device.eventPhase[i] && runs.back().lastEvent == event - 1)
            runs.back().lastEvent = event;
        else if (device.eventPhase[i] != Phase::Unknown)
            runs.push_back({ event, event, device.eventPhase[i] });
    }
    return runs;
}

// The report's columns as it voted them from the per-event phases before: the majority phase of
// each column, merged, Unknown left out.
std::vector<report::ChartPhaseRun> columnsFromEvents(const DeviceAnalysis& device, size_t columns)
{
    std::vector<report::ChartPhaseRun> runs;
    const size_t n = device.eventPhase.size();
    for (size_t b = 0; b < columns; ++b) {
        const size_t first = (b * n + columns - 1) / columns;
        const size_t end = ((b + 1) * n + columns - 1) / columns;
        std::array<uint32_t, phaseCount> votes {};
        for (size_t i = first; i < end; ++i)
            ++votes[size_t(device.eventPhase[i])];
        const auto phase = Phase(std::max_element(votes.begin(), votes.end()) - votes.begin());
        if (!runs.empty() && runs.back().phase == phase)
            runs.back().lastEvent = int64_t(end) - 1;
        else
            runs.push_back({ int64_t(first), int64_t(end) - 1, phase });
    }
    std::erase_if(runs, [](const report::ChartPhaseRun& r) { return r.phase == Phase::Unknown; });
    return runs;
}

bool sameRuns(const std::vector<report::ChartPhaseRun>& a, const std::vector<PhaseRun>& b)
{
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        return x.firstEvent == y.firstEvent && x.lastEvent == y.lastEvent && x.phase == y.phase;
    });
}

bool sameSpans(const std::vector<AnnotationSpan>& a, const std::vector<AnnotationSpan>& b)
{
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        return x.name == y.name && x.startUs == y.startUs && x.endUs == y.endUs && x.firstEvent == y.firstEvent
            && x.lastEvent == y.lastEvent && x.depth == y.depth && x.closed == y.closed && x.mark == y.mark;
    });
}

bool sameColumns(const std::vector<report::ChartPhaseRun>& a, const std::vector<report::ChartPhaseRun>& b)
{
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        return x.firstEvent == y.firstEvent && x.lastEvent == y.lastEvent && x.phase == y.phase;
    });
}

} // namespace

// Phase runs, step starts, the time axis, the annotation spans, each device's trace history and
// the card's reconciliation with its timeline band are derived once, into the case analysis; the app's
// timeline and the HTML report read those fields. Each check below fails if a consumer went back
// to deriving its own copy differently, or the field stopped saying what the consumers drew.
class TestDerivedOnce : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void phaseRunsAreTheAnalysisOnes()
    {
        const Fixture fixture = analyzedRun();
        QVERIFY(fixture.device);
        const DeviceAnalysis& device = *fixture.device;
        const std::vector<PhaseRun> expected = runsFromEvents(device);
        QVERIFY(expected.size() >= 5); // load, forward, backward, optimizer, forward, ...
        QCOMPARE(device.phaseRuns.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(device.phaseRuns[i].firstEvent, expected[i].firstEvent);
            QCOMPARE(device.phaseRuns[i].lastEvent, expected[i].lastEvent);
            QCOMPARE(device.phaseRuns[i].phase, expected[i].phase);
        }
        // The view hands out the analysis' own runs.
        const TimelineData data(snapshotOf(fixture), device.device);
        QCOMPARE(&data.phaseRuns(), &device.phaseRuns);
        // The report at one column per event draws exactly those runs; at fewer columns, the
        // majority of each column as it voted from the events.
        const TimelineSeries series(device);
        const auto events = size_t(series.eventCount());
        QVERIFY(sameRuns(report::timelineChartData(device, series, events).phases, device.phaseRuns));
        for (size_t columns : { size_t(1), size_t(2), size_t(3), size_t(5), events - 1 }) {
            const auto chart = report::timelineChartData(device, series, columns);
            QVERIFY2(sameColumns(chart.phases, columnsFromEvents(device, columns)),
                qPrintable(QStringLiteral("%1 columns").arg(columns)));
        }
    }

    void stepStartsAndTimeAxisAreTheAnalysisOnes()
    {
        const Fixture fixture = analyzedRun();
        const DeviceAnalysis& device = *fixture.device;
        std::vector<StepStart> expected;
        int32_t current = -1;
        for (size_t i = 0; i < device.eventStep.size(); ++i) {
            if (device.eventStep[i] >= 0 && device.eventStep[i] != current)
                expected.push_back({ int64_t(i), current = device.eventStep[i] });
        }
        QVERIFY(expected.size() >= 2);
        QCOMPARE(device.stepStarts.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(device.stepStarts[i].event, expected[i].event);
            QCOMPARE(device.stepStarts[i].step, expected[i].step);
        }
        const TimelineData data(snapshotOf(fixture), device.device);
        QCOMPARE(&data.stepStarts(), &device.stepStarts);

        // The axis starts at the first entry with a time and runs on time_us's running maximum.
        const DeviceTrace& trace = *fixture.input.snapshots.front()->trace(device.device);
        QCOMPARE(device.timeAxis.originUs, int64_t(100));
        QCOMPARE(device.timeAxis.firstUs, trace.events.front().timeUs);
        QCOMPARE(device.timeAxis.lastUs, trace.events.back().timeUs);
        QVERIFY(data.hasTime());
        int64_t runningMax = 0;
        for (size_t i = 0; i < trace.events.size(); ++i) {
            runningMax = std::max(runningMax, trace.events[i].timeUs);
            QCOMPARE(data.timeOf(int64_t(i)), std::max<int64_t>(0, runningMax - 100));
            QCOMPARE(data.eventAtTime(data.timeOf(int64_t(i))) >= int64_t(i), true);
        }
        // The report's axis title spans the trace as recorded.
        const TimelineSeries series(device);
        const auto chart = report::timelineChartData(device, series, 10);
        QCOMPARE(chart.firstTimeUs, device.timeAxis.firstUs);
        QCOMPARE(chart.lastTimeUs, device.timeAxis.lastUs);
    }

    void annotationSpansAreTheAnalysisOnes()
    {
        const Fixture fixture = analyzedRun(spannedRun);
        const DeviceAnalysis& device = *fixture.device;
        const Snapshot& snapshot = *fixture.input.snapshots.front();
        // The field says what the derivation says: the record_function ranges and the recompute.
        const std::vector<AnnotationSpan>& spans = device.annotationSpans;
        QVERIFY(sameSpans(spans, annotationAndRecomputeSpans(snapshot, device)));
        const auto named = [&](std::string_view name) {
            return int(
                std::count_if(spans.begin(), spans.end(), [&](const AnnotationSpan& s) { return s.name == name; }));
        };
        QCOMPARE(named("ProfilerStep#1"), 1);
        QCOMPARE(named("Optimizer.step#AdamW.step"), 1);
        QCOMPARE(named(recomputeSpanName), 1);
        QVERIFY(std::any_of(spans.begin(), spans.end(), [](const AnnotationSpan& s) { return !s.closed; }));

        // The view hands out the analysis' own spans.
        const TimelineData data(snapshotOf(fixture), device.device);
        QCOMPARE(&data.annotationSpans(), &device.annotationSpans);

        // The report's chart draws the field, not spans of its own from the snapshot: at one
        // column per event every range is drawn; with the field changed, the chart changes with it.
        const TimelineSeries series(device);
        const auto events = size_t(series.eventCount());
        const auto chart = report::timelineChartData(device, series, events);
        const auto ranges = std::count_if(
            spans.begin(), spans.end(), [](const AnnotationSpan& s) { return !s.mark && s.lastEvent >= s.firstEvent; });
        QCOMPARE(qsizetype(chart.spans.size()), qsizetype(ranges));
        for (const report::ChartSpan& drawn : chart.spans) {
            QVERIFY(std::any_of(spans.begin(), spans.end(), [&](const AnnotationSpan& s) {
                return s.firstEvent == drawn.firstEvent && s.lastEvent == drawn.lastEvent
                    && annotationLabel(s.name) == drawn.label;
            }));
        }
        DeviceAnalysis altered = device;
        AnnotationSpan only;
        only.name = "only-in-the-field";
        only.firstEvent = 1;
        only.lastEvent = 2;
        altered.annotationSpans = { only };
        const auto alteredChart = report::timelineChartData(altered, series, events);
        QCOMPARE(alteredChart.spans.size(), size_t(1));
        QCOMPARE(alteredChart.spans.front().label, std::string("only-in-the-field"));
        altered.annotationSpans.clear();
        QVERIFY(report::timelineChartData(altered, series, events).spans.empty());
    }

    void traceHistoryIsCountedOnce()
    {
        const Fixture fixture = analyzedRun();
        const DeviceAnalysis& device = *fixture.device;
        const TraceHistory counted = traceHistory(*fixture.input.snapshots.front(), device);
        QCOMPARE(device.history.coverage, counted.coverage);
        QCOMPARE(device.history.traceEvents, counted.traceEvents);
        QCOMPARE(device.history.allocEvents, counted.allocEvents);
        QCOMPARE(device.history.olderBytes(), counted.olderBytes());
        QCOMPARE(device.history.liveBlocks, counted.liveBlocks);
        QCOMPARE(device.history.backend, counted.backend);
        // The report shows that history, with the case's backend.
        const report::ReportContext context(fixture.input, fixture.loaded->analysis, report::ReportOptions {});
        QCOMPARE(context.snapshots.size(), size_t(1));
        QCOMPARE(context.snapshots.front().history.traceEvents, device.history.traceEvents);
        QCOMPARE(context.snapshots.front().history.coverage, device.history.coverage);
    }

    void cardAndItsBandAreTheAnalysisOnes()
    {
        const Fixture fixture = analyzedRun();
        const CaseAnalysis& analysis = fixture.loaded->analysis;
        const DeviceAnalysis& device = *fixture.device;
        QVERIFY(analysis.card.available());
        const CardReconciliation again = reconcileCard(fixture.input, analysis);
        QCOMPARE(analysis.card.restOfCardBytes, again.restOfCardBytes);
        QCOMPARE(analysis.card.figures.size(), again.figures.size());
        for (size_t i = 0; i < again.figures.size(); ++i) {
            QCOMPARE(analysis.card.figures[i].key, again.figures[i].key);
            QCOMPARE(analysis.card.figures[i].bytes, again.figures[i].bytes);
        }
        // The report reads the analysis' card, not a copy of its own.
        const report::ReportContext context(fixture.input, analysis, report::ReportOptions {});
        QCOMPARE(&context.card, &analysis.card);

        // The band over the timeline follows the three oom events, for the view and the report alike.
        const CardTimelineBand* band = analysis.cardBandOn(0, device.device);
        QVERIFY(band);
        QVERIFY(!analysis.cardBandOn(0, device.device + 1));
        QVERIFY(!analysis.cardBandOn(1, device.device));
        const CardTimelineBand followed = followOomFigures(*cardTimelineBand(again), device);
        QCOMPARE(band->samples.size(), size_t(3));
        QCOMPARE(band->samples.size(), followed.samples.size());
        for (size_t i = 0; i < followed.samples.size(); ++i) {
            QCOMPARE(band->samples[i].event, followed.samples[i].event);
            QCOMPARE(band->samples[i].outsideBytes, followed.samples[i].outsideBytes);
        }
        QCOMPARE(band->label, followed.label);
    }
};

QTEST_GUILESS_MAIN(TestDerivedOnce)
#include "tst_derivedonce.moc"
