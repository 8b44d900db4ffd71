#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/compare/comparison.h"
#include "core/compare/comparisonjson.h"
#include "core/compare/comparisontext.h"
#include "core/compare/timenormalisedoverlay.h"
#include "core/report/htmlreport.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"

#include <QFile>
#include <QTest>

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace oomlens;

namespace {

const char* const attentionStack
    = "stack=model.py:attention:44;torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";
const char* const rotaryStack
    = "stack=model.py:rotary:30;torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";
const char* const dropoutStack
    = "stack=model.py:dropout:33;torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";
const char* const keptLossStack = "stack=train.py:train_step:41;train.py:main:90";

// A small training run in TraceBuilder's words: weights, then per step the batch, two forward
// sites saved for backward, backward scratch and gradients, Adam state made in step 1, an
// optimizer temporary, zero_grad.
struct RunShape
{
    int steps = 3;
    int activationMiB = 8;
    int backwardScratchMiB = 2;
    int optimizerTemporaryMiB = 1;
    int leakMiB = 0; // kept alive every step (the losses appended to a list)
    int paddingMiB = 0; // shifts every address: same program, different placement
    bool rotary = false; // a site only this run has
    bool dropout = false;
    bool oomAtEnd = false;
};

std::string trainingRun(const RunShape& shape)
{
    std::string text = "before w 16MiB load\n";
    if (shape.paddingMiB > 0)
        text += "alloc pad " + std::to_string(shape.paddingMiB) + "MiB load\n";
    for (int i = 1; i <= shape.steps; ++i) {
        const std::string n = std::to_string(i);
        text += "alloc x" + n + " 1MiB data\n";
        text += "alloc act" + n + " " + std::to_string(shape.activationMiB) + "MiB fwd\n";
        text += "alloc att" + n + " 2MiB " + attentionStack + "\n";
        if (shape.rotary)
            text += "alloc rot" + n + " 3MiB " + rotaryStack + "\n";
        if (shape.dropout)
            text += "alloc drop" + n + " 3MiB " + dropoutStack + "\n";
        if (shape.leakMiB > 0)
            text += "alloc keep" + n + " " + std::to_string(shape.leakMiB) + "MiB " + keptLossStack + "\n";
        text += "alloc scratch" + n + " " + std::to_string(shape.backwardScratchMiB) + "MiB bwd\n";
        text += "alloc g" + n + " 4MiB grad\n";
        text += "free act" + n + " bwd\nfree att" + n + " bwd\nfree scratch" + n + " bwd\n";
        if (shape.rotary)
            text += "free rot" + n + " bwd\n";
        if (shape.dropout)
            text += "free drop" + n + " bwd\n";
        if (i == 1)
            text += "alloc state 4MiB optinit\n";
        text
            += "alloc tmp" + n + " " + std::to_string(shape.optimizerTemporaryMiB) + "MiB opt\nfree tmp" + n + " opt\n";
        text += "free g" + n + " zero\nfree x" + n + " none\n";
    }
    if (shape.oomAtEnd)
        text += "alloc x9 1MiB data\nalloc act9 " + std::to_string(shape.activationMiB)
            + "MiB fwd\noom 64MiB free=1MiB fwd\n";
    return text;
}

SnapshotAnalysis analyze(const RunShape& shape)
{
    std::string error;
    auto snapshot = test::buildSnapshot(trainingRun(shape), &error);
    if (!snapshot)
        qFatal("bad trace: %s", error.c_str());
    return analyzeSnapshot(snapshot);
}

SnapshotAnalysis analyzeFile(const QString& path)
{
    const QByteArray bytes = test::readFile(path);
    const SnapshotReadResult read = readSnapshot(std::string_view(bytes.constData(), size_t(bytes.size())));
    if (!read.snapshot)
        qFatal("%s: %s", qPrintable(path), read.error.c_str());
    return analyzeSnapshot(read.snapshot);
}

QString pairFile(const nlohmann::json& name)
{
    return test::testDataDir() + QStringLiteral("/compare/") + QString::fromStdString(name.get<std::string>());
}

nlohmann::json pairTruth()
{
    return nlohmann::json::parse(
        test::readFile(test::testDataDir() + QStringLiteral("/compare/truth.json")).toStdString());
}

const ComparedSite* findSite(const Comparison& comparison, std::string_view innermost)
{
    for (const ComparedSite& site : comparison.sites) {
        if (!site.key.frames.empty() && site.key.frames.front() == innermost)
            return &site;
    }
    return nullptr;
}

int64_t delta(const CategoryDelta& bytes, Category category)
{
    return bytes[static_cast<size_t>(category)];
}

} // namespace

class TestCompare : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // The same program placed at other addresses: every site matches, nothing moves.
    void sitesMatchByStackNotAddress()
    {
        const SnapshotAnalysis a = analyze({});
        const SnapshotAnalysis b = analyze({ .paddingMiB = 6 });
        const Comparison comparison = compareSnapshots(a, b);
        QVERIFY(!comparison.sites.empty());
        for (const ComparedSite& site : comparison.sites) {
            if (site.key.frames.empty() || site.key.phase == Phase::Load)
                continue; // the padding itself, and the weights older than the trace
            QVERIFY2(!site.isNew() && !site.vanished(), siteLabel(site.key).c_str());
            QCOMPARE(site.a.allocatedBytes, site.b.allocatedBytes);
        }
        const ComparedSite* attention = findSite(comparison, "model.py:44:attention");
        QVERIFY(attention);
        QCOMPARE(attention->a.allocatedCount, 3u);
        QCOMPARE(attention->b.allocatedCount, 3u);
        QCOMPARE(attention->key.phase, Phase::Forward);
        // The user's frames only, innermost first: PyTorch's module.py is not part of the key.
        QCOMPARE(attention->key.frames,
            (std::vector<std::string> { "model.py:44:attention", "train.py:40:train_step", "train.py:90:main" }));
    }

    // Halving the activations: the forward site shrinks at the peak, the category delta and the
    // sentence say so, and the site that changed comes first.
    void activationsCut()
    {
        const Comparison comparison = compareSnapshots(analyze({}), analyze({ .activationMiB = 4 }));
        QCOMPARE(comparison.a.peak.allocatedBytes - comparison.b.peak.allocatedBytes, 4 * MiB);
        QCOMPARE(delta(comparison.categoriesDeltaAtPeak, Category::Activations), -int64_t(4 * MiB));
        QCOMPARE(delta(comparison.categoriesDeltaAtPeak, Category::Parameters), 0);
        QVERIFY(!comparison.categoriesDeltaAtOom);
        const ComparedSite& first = comparison.sites.front();
        QCOMPARE(first.key.frames.front(), std::string("model.py:12:forward"));
        QCOMPARE(first.key.category, Category::Activations);
        QCOMPARE(first.a.peakBytes, 8 * MiB);
        QCOMPARE(first.b.peakBytes, 4 * MiB);
        QCOMPARE(first.peakDelta(), -int64_t(4 * MiB));
        QCOMPARE(first.allocatedDelta(), -int64_t(12 * MiB)); // three steps
        for (size_t i = 1; i < comparison.sites.size(); ++i)
            QVERIFY(std::llabs(comparison.sites[i - 1].peakDelta()) >= std::llabs(comparison.sites[i].peakDelta()));
        // Step 2's backward: the Adam state made in step 1 is there too.
        QCOMPARE(comparison.a.peak.phase, Phase::Backward);
        QCOMPARE(comparison.a.peak.step, 2);
        QCOMPARE(QString::fromStdString(comparison.summary),
            QStringLiteral("B cut activations at the peak by 4.00 MiB; the peak stays in the backward of step 2; "
                           "peak 37.00 MiB \u2192 33.00 MiB (-11%)"));
    }

    // A large optimizer temporary moves the peak from the backward to the optimizer step.
    void peakMoved()
    {
        const Comparison comparison = compareSnapshots(analyze({}), analyze({ .optimizerTemporaryMiB = 40 }));
        QCOMPARE(comparison.a.peak.phase, Phase::Backward);
        QCOMPARE(comparison.b.peak.phase, Phase::Optimizer);
        QCOMPARE(comparison.b.peak.step, 1);
        QVERIFY2(comparison.summary.find("the peak moved from the backward of step 2 to the optimizer step of step 1")
                != std::string::npos,
            comparison.summary.c_str());
        QVERIFY2(
            comparison.summary.starts_with("B added 38.00 MiB of temporaries at the peak"), comparison.summary.c_str());
    }

    void newAndVanishedSites()
    {
        const Comparison comparison = compareSnapshots(analyze({ .dropout = true }), analyze({ .rotary = true }));
        const std::vector<const ComparedSite*> added = comparison.newSites();
        const std::vector<const ComparedSite*> vanished = comparison.vanishedSites();
        QCOMPARE(added.size(), size_t(1));
        QCOMPARE(vanished.size(), size_t(1));
        QCOMPARE(added.front()->key.frames.front(), std::string("model.py:30:rotary"));
        QCOMPARE(added.front()->b.peakBytes, 3 * MiB);
        QCOMPARE(added.front()->b.allocatedBytes, 9 * MiB);
        QCOMPARE(added.front()->a.allocatedCount, 0u);
        QCOMPARE(vanished.front()->key.frames.front(), std::string("model.py:33:dropout"));
        QCOMPARE(vanished.front()->a.peakBytes, 3 * MiB);
        QVERIFY(comparison.b.snapshot);
        QVERIFY(added.front()->stackB != FrameTable::emptyStack());
        QCOMPARE(added.front()->stackA, FrameTable::emptyStack());
    }

    // One run fails: the categories are compared at its OOM against the other's peak.
    void oomOnOneSide()
    {
        const Comparison comparison = compareSnapshots(analyze({}), analyze({ .oomAtEnd = true }));
        QVERIFY(!comparison.a.oom);
        QVERIFY(comparison.b.oom);
        QCOMPARE(comparison.b.oom->phase, Phase::Forward);
        QVERIFY(comparison.categoriesDeltaAtOom.has_value());
        QVERIFY2(comparison.summary.find("B ran out of memory in the forward of step") != std::string::npos,
            comparison.summary.c_str());
        QVERIFY(comparison.summary.ends_with("A did not"));
    }

    // Step 2 vs step 3 of a leaking run: the kept losses outlive both windows and repeat; the
    // next step's peak is higher by exactly the leak.
    void windowsOfALeakingRun()
    {
        const SnapshotAnalysis run = analyze({ .steps = 4, .leakMiB = 2 });
        QVERIFY(windowProblem(*run.primary(), { 2, 2 }).empty());
        const Comparison comparison = compareWindows(run, { 2, 2 }, { 3, 3 });
        QVERIFY(comparison.windows);
        QCOMPARE(comparison.a.label, std::string("step 2"));
        QCOMPARE(comparison.b.label, std::string("step 3"));
        QCOMPARE(comparison.a.peak.step, 2);
        QCOMPARE(comparison.b.peak.step, 3);
        QCOMPARE(comparison.b.peak.allocatedBytes - comparison.a.peak.allocatedBytes, 2 * MiB);
        QVERIFY(comparison.a.lastEvent < comparison.b.firstEvent);
        // Matched across the windows though every address differs.
        const ComparedSite* attention = findSite(comparison, "model.py:44:attention");
        QVERIFY(attention);
        QCOMPARE(attention->a.allocatedBytes, 2 * MiB);
        QCOMPARE(attention->b.allocatedBytes, 2 * MiB);
        QVERIFY(comparison.newSites().empty());

        QCOMPARE(comparison.surviving.size(), size_t(1));
        const SurvivingSite& kept = comparison.surviving.front();
        QCOMPARE(kept.key.frames.front(), std::string("train.py:41:train_step"));
        QCOMPARE(kept.bytes, 2 * MiB);
        QCOMPARE(kept.count, 1u);
        QVERIFY(kept.repeats);
        QCOMPARE(comparison.survivingBytes, 2 * MiB);
        QVERIFY2(comparison.summary.find("2.00 MiB allocated in step 2 is still alive after step 3, 2.00 MiB of it "
                                         "from sites that keep doing so (a leak)")
                != std::string::npos,
            comparison.summary.c_str());
        QVERIFY2(comparison.summary.find("both peak in the backward") != std::string::npos, comparison.summary.c_str());
    }

    // Step 1 made the optimizer state once: it survives, but does not repeat, so it is listed
    // after the leak.
    void oneOffStateDoesNotRepeat()
    {
        const SnapshotAnalysis run = analyze({ .steps = 3, .leakMiB = 2 });
        const Comparison comparison = compareWindows(run, { 1, 1 }, { 2, 2 });
        QCOMPARE(comparison.surviving.size(), size_t(2));
        QVERIFY(comparison.surviving[0].repeats);
        QCOMPARE(comparison.surviving[0].key.frames.front(), std::string("train.py:41:train_step"));
        QVERIFY(!comparison.surviving[1].repeats);
        QCOMPARE(comparison.surviving[1].key.category, Category::OptimizerState);
        QCOMPARE(comparison.surviving[1].bytes, 4 * MiB);
        QCOMPARE(comparison.survivingBytes, 6 * MiB);
    }

    // The app's two selections on one timeline: event ranges. The same events as two step windows
    // give the same comparison, on a time-normalised axis.
    void eventWindows()
    {
        const SnapshotAnalysis run = analyze({ .steps = 4, .leakMiB = 2 });
        const Comparison bySteps = compareWindows(run, { 2, 2 }, { 3, 3 });
        const EventWindow first { bySteps.a.firstEvent, bySteps.a.lastEvent };
        const EventWindow second { bySteps.b.firstEvent, bySteps.b.lastEvent };
        const Comparison byEvents = compareEventWindows(run, first, second);
        QVERIFY(byEvents.windows);
        QVERIFY(!byEvents.a.wholeTrace && !byEvents.a.window);
        QCOMPARE(byEvents.a.label,
            "events " + std::to_string(first.firstEvent) + "\u2013" + std::to_string(first.lastEvent));
        QCOMPARE(byEvents.a.peak.allocatedBytes, bySteps.a.peak.allocatedBytes);
        QCOMPARE(byEvents.b.peak.event, bySteps.b.peak.event);
        QCOMPARE(byEvents.categoriesDeltaAtPeak, bySteps.categoriesDeltaAtPeak);
        QCOMPARE(byEvents.sites.size(), bySteps.sites.size());
        QCOMPARE(byEvents.survivingBytes, 2 * MiB);
        QVERIFY(!byEvents.timeline.stepAligned);
        // Ranges past the trace are clamped to it.
        const Comparison clamped = compareEventWindows(run, { -5, 3 }, { 10, 1 << 30 });
        QCOMPARE(clamped.a.firstEvent, 0);
        QCOMPARE(clamped.b.lastEvent, int64_t(run.primary()->allocatedAfter.size()) - 1);
        QCOMPARE(clamped.b.peak.allocatedBytes, run.primary()->peakAllocatedBytes);
    }

    void windowsCoverSeveralSteps()
    {
        const SnapshotAnalysis run = analyze({ .steps = 4 });
        const Comparison comparison = compareWindows(run, { 1, 2 }, { 3, 4 });
        QCOMPARE(comparison.a.label, std::string("steps 1\u20132"));
        QCOMPARE(comparison.a.stepCount, 2); // steps 1 and 2 both start inside the window
        QVERIFY(comparison.timeline.stepAligned);
        QCOMPARE(comparison.timeline.axisEnd, 2.0);
        QCOMPARE(comparison.timeline.firstStepA, 1);
        QCOMPARE(comparison.timeline.firstStepB, 3);
        const ComparedSite* forward = findSite(comparison, "model.py:12:forward");
        QVERIFY(forward);
        QCOMPARE(forward->a.allocatedCount, 2u);
        QCOMPARE(forward->b.allocatedCount, 2u);
    }

    void stepWindowsParseAndValidate()
    {
        QCOMPARE(parseStepWindow("3:4"), std::optional<StepWindow>(StepWindow { 3, 4 }));
        QCOMPARE(parseStepWindow("5"), std::optional<StepWindow>(StepWindow { 5, 5 }));
        QVERIFY(!parseStepWindow("4:3"));
        QVERIFY(!parseStepWindow("a:b"));
        QVERIFY(!parseStepWindow(""));
        QVERIFY(!parseStepWindow("-1:2"));
        QVERIFY(!parseStepWindow("1:2:3"));
        const SnapshotAnalysis run = analyze({ .steps = 3 });
        QVERIFY(windowProblem(*run.primary(), { 3, 3 }).empty());
        const std::string problem = windowProblem(*run.primary(), { 7, 8 });
        QVERIFY2(problem.find("steps 7\u20138 is not in the trace, which has steps 0\u20133") != std::string::npos,
            problem.c_str());
    }

    // Both runs have steps: step starts line up; the overlay keeps each side's peak height.
    void overlaidTimeline()
    {
        const Comparison comparison
            = compareSnapshots(analyze({ .steps = 3 }), analyze({ .steps = 2, .activationMiB = 4 }));
        const ComparisonTimeline& timeline = comparison.timeline;
        QVERIFY(timeline.stepAligned);
        QCOMPARE(timeline.axisEnd, 4.0); // step 0 (loading) and three steps
        QCOMPARE(timeline.firstStepA, 0);
        QCOMPARE(timeline.firstStepB, 0);
        QVERIFY(!timeline.columns.empty());
        uint64_t highestA = 0;
        uint64_t highestB = 0;
        bool bEndsEarlier = false;
        for (const OverlayColumn& column : timeline.columns) {
            highestA = std::max(highestA, column.a.present ? column.a.high : 0);
            highestB = std::max(highestB, column.b.present ? column.b.high : 0);
            QVERIFY(column.a.present);
            bEndsEarlier |= !column.b.present;
            QVERIFY(column.a.low <= column.a.high);
        }
        QCOMPARE(highestA, comparison.a.peak.allocatedBytes);
        QCOMPARE(highestB, comparison.b.peak.allocatedBytes);
        QCOMPARE(timeline.maxBytes, comparison.a.peak.allocatedBytes);
        QVERIFY(bEndsEarlier); // B has one step fewer
        QVERIFY(timeline.columns.front().start < timeline.columns.back().end);
    }

    // Without steps (an inference script, a load that failed) each run's time is stretched onto 0..1.
    void timeNormalisedWithoutSteps()
    {
        const auto loadOnly = [](int count) {
            std::string text;
            for (int i = 0; i < count; ++i)
                text += "alloc p" + std::to_string(i) + " 4MiB load\n";
            return analyzeSnapshot(test::buildSnapshot(text));
        };
        CompareOptions options;
        options.timelineColumns = 50;
        const Comparison comparison = compareSnapshots(loadOnly(10), loadOnly(20), options);
        const ComparisonTimeline& timeline = comparison.timeline;
        QVERIFY(!timeline.stepAligned);
        QCOMPARE(timeline.axisEnd, 1.0);
        QCOMPARE(timeline.columns.size(), size_t(50));
        QCOMPARE(timeline.columns.back().end, 1.0);
        // Both runs end at their own peak, at the right edge, however long each took.
        QCOMPARE(timeline.columns.back().a.high, 40 * MiB);
        QCOMPARE(timeline.columns.back().b.high, 80 * MiB);
        for (const OverlayColumn& column : timeline.columns)
            QVERIFY(column.a.present && column.b.present);
        QVERIFY(comparison.summary.starts_with("B added 40.00 MiB of parameters at the peak"));
    }

    // The Compare view's time-normalised overlay puts each event where the timelines draw it, on
    // the analysis' time axis, not at its raw time_us. A: the first event has no time (0), the
    // clock then steps 1000 us; the axis starts at the first time, raw times would start the run
    // at 0. B: the clock steps back at the last event; the axis holds its running maximum, raw
    // times would end the run at the stepped-back time, a shorter span.
    void timeNormalisedOverlayFollowsTheTimeAxis()
    {
        const auto run = [](const std::vector<int>& times) {
            std::string text = "segment s0 0x7f0000000000 64MiB large stream=0\n";
            for (size_t i = 0; i < times.size(); ++i)
                text += "alloc a" + std::to_string(i) + " 2MiB load in=s0 t=" + std::to_string(times[i]) + "\n";
            return analyzeSnapshot(test::buildSnapshot(text));
        };
        const SnapshotAnalysis a = run({ 0, 1000, 2000, 3000, 4000 });
        const SnapshotAnalysis b = run({ 1000, 2000, 5000, 3000 });
        const DeviceAnalysis& deviceA = *a.primary();
        const DeviceAnalysis& deviceB = *b.primary();
        QCOMPARE(deviceA.allocatedAfter.size(), size_t(5)); // no segment events: one event per alloc
        QCOMPARE(deviceB.allocatedAfter.size(), size_t(4));
        const Comparison comparison = compareSnapshots(a, b);
        const ComparisonTimeline timeline = timeNormalisedOverlay(comparison, deviceA, deviceB, 4);
        QCOMPARE(timeline.columns.size(), size_t(4));
        // On the axis A's events sit at 0, 0, 1/3, 2/3 and 1 of its run (raw: 0, 1/4, 1/2, 3/4, 1),
        // B's at 0, 1/4, 1, 1 (raw: 0, 1/2, 2, 1). Each column spans the level before it to its events'.
        const std::vector<std::pair<uint64_t, uint64_t>> expectedA
            = { { 0, 4 * MiB }, { 4 * MiB, 6 * MiB }, { 6 * MiB, 8 * MiB }, { 8 * MiB, 10 * MiB } };
        const std::vector<std::pair<uint64_t, uint64_t>> expectedB
            = { { 0, 2 * MiB }, { 2 * MiB, 4 * MiB }, { 4 * MiB, 4 * MiB }, { 4 * MiB, 8 * MiB } };
        for (size_t c = 0; c < 4; ++c) {
            const OverlayColumn& column = timeline.columns[c];
            QVERIFY(column.a.present && column.b.present);
            QCOMPARE(std::pair(column.a.low, column.a.high), expectedA[c]);
            QCOMPARE(std::pair(column.b.low, column.b.high), expectedB[c]);
        }
        QCOMPARE(timeline.maxBytes, 10 * MiB);
    }

    void jsonContract()
    {
        const Comparison comparison = compareSnapshots(analyze({}), analyze({ .activationMiB = 4 }));
        const nlohmann::ordered_json json = comparisonToJson(comparison);
        QCOMPARE(json["tool"].get<std::string>(), std::string("oomlens"));
        const auto& compare = json["compare"];
        for (const char* key : { "a", "b", "categories_delta", "sites", "summary" })
            QVERIFY2(compare.contains(key), key);
        QCOMPARE(compare["a"]["peak_allocated_bytes"].get<uint64_t>(), 37 * MiB);
        QCOMPARE(compare["b"]["categories_at_peak"]["activations"].get<uint64_t>(),
            comparison.b.peak.categories[static_cast<size_t>(Category::Activations)]);
        QCOMPARE(compare["categories_delta"]["activations"].get<int64_t>(), -int64_t(4 * MiB));
        QCOMPARE(compare["categories_delta"].size(), size_t(categoryCount));
        const auto& site = compare["sites"][0];
        for (const char* key : { "stack", "category", "a_bytes", "b_bytes", "delta_bytes", "phase" })
            QVERIFY2(site.contains(key), key);
        QCOMPARE(site["stack"][0].get<std::string>(), std::string("model.py:12:forward"));
        QCOMPARE(site["category"].get<std::string>(), std::string("activations"));
        QCOMPARE(site["delta_bytes"].get<int64_t>(), -int64_t(4 * MiB));
        QVERIFY(compare["surviving"].is_null());
        QCOMPARE(compare["summary"].get<std::string>(), comparison.summary);
    }

    void textNamesTheChange()
    {
        const Comparison comparison
            = compareSnapshots(analyze({ .dropout = true }), analyze({ .activationMiB = 4, .rotary = true }));
        const std::string text = comparisonToText(comparison);
        QVERIFY2(text.find("Peak allocated") != std::string::npos, text.c_str());
        QVERIFY(text.find("model.py:12:forward") != std::string::npos);
        QVERIFY(text.find("New in B (1)") != std::string::npos);
        QVERIFY(text.find("Vanished from B (1)") != std::string::npos);
        QVERIFY(text.find("model.py:30:rotary") != std::string::npos);
        QVERIFY(text.find("Summary: " + comparison.summary) != std::string::npos);
    }

    // The generated pairs (tests/data/compare, tests/tools/make_pairs.py): the peaks the generator
    // counted, the category that moved, the sites that appeared and vanished.
    void generatedPairs_data()
    {
        QTest::addColumn<QString>("pair");
        for (const char* pair : { "checkpointing", "batch", "fused" })
            QTest::newRow(pair) << QString::fromLatin1(pair);
    }
    void generatedPairs()
    {
        QFETCH(QString, pair);
        const nlohmann::json truth = pairTruth()[pair.toStdString()];
        const Comparison comparison
            = compareSnapshots(analyzeFile(pairFile(truth["a"])), analyzeFile(pairFile(truth["b"])));
        QCOMPARE(comparison.a.peak.allocatedBytes, truth["a_peak_allocated_bytes"].get<uint64_t>());
        QCOMPARE(comparison.b.peak.allocatedBytes, truth["b_peak_allocated_bytes"].get<uint64_t>());
        if (truth.contains("largest_category_delta")) {
            const auto& delta = comparison.categoriesDeltaAtPeak;
            const auto largest = std::max_element(
                delta.begin(), delta.end(), [](int64_t x, int64_t y) { return std::llabs(x) < std::llabs(y); });
            QCOMPARE(std::string(categoryName(static_cast<Category>(largest - delta.begin()))),
                truth["largest_category_delta"].get<std::string>());
            QVERIFY(*largest * truth["activations_delta_sign"].get<int>() > 0);
            QVERIFY2(comparison.summary.starts_with("B cut activations at the peak by"), comparison.summary.c_str());
        }
        if (truth.contains("new_sites"))
            QCOMPARE(comparison.newSites().size(), truth["new_sites"].get<size_t>());
        if (truth.contains("vanished_sites"))
            QCOMPARE(comparison.vanishedSites().size(), truth["vanished_sites"].get<size_t>());
        const auto hasSite = [](const std::vector<const ComparedSite*>& sites, const nlohmann::json& frames,
                                 const nlohmann::json& category, const nlohmann::json& phase) {
            return std::any_of(sites.begin(), sites.end(), [&](const ComparedSite* site) {
                return site->key.frames.front() == frames[0].get<std::string>()
                    && categoryName(site->key.category) == category.get<std::string>()
                    && phaseName(site->key.phase) == phase.get<std::string>();
            });
        };
        if (truth.contains("new_site_frames"))
            QVERIFY(hasSite(
                comparison.newSites(), truth["new_site_frames"], truth["new_site_category"], truth["new_site_phase"]));
        if (truth.contains("vanished_site_frames")) {
            const std::vector<const ComparedSite*> vanished = comparison.vanishedSites();
            QVERIFY(hasSite(vanished, truth["vanished_site_frames"], truth["vanished_site_category"],
                truth["vanished_site_phase"]));
            QCOMPARE(vanished.front()->a.allocatedBytes,
                truth["foreach_sqrt_bytes_per_step"].get<uint64_t>() * truth["steps"].get<uint64_t>());
        }
        if (pair == QLatin1String("checkpointing")) {
            // Every block's saved tensors but its input leave the peak; what is recomputed in their place is
            // backward scratch (temporaries), so the activations fall by exactly what the blocks saved.
            const uint64_t saved = truth["saved_per_block_bytes"].get<uint64_t>() * truth["blocks"].get<uint64_t>();
            QCOMPARE(delta(comparison.categoriesDeltaAtPeak, Category::Activations), -int64_t(saved));
        }
    }

    void generatedLeakWindows()
    {
        const nlohmann::json truth = pairTruth()["leak"];
        const SnapshotAnalysis run = analyzeFile(pairFile(truth["snapshot"]));
        QCOMPARE(run.primary()->peakAllocatedBytes, truth["peak_allocated_bytes"].get<uint64_t>());
        const auto first = parseStepWindow(truth["windows"][0].get<std::string>());
        const auto second = parseStepWindow(truth["windows"][1].get<std::string>());
        QVERIFY(first && second);
        const Comparison comparison = compareWindows(run, *first, *second);
        const uint64_t leak = truth["leak_bytes_per_step"].get<uint64_t>();
        QCOMPARE(comparison.b.peak.allocatedBytes - comparison.a.peak.allocatedBytes, leak);
        QCOMPARE(comparison.survivingBytes, leak);
        QCOMPARE(comparison.surviving.size(), size_t(1));
        const SurvivingSite& site = comparison.surviving.front();
        QVERIFY(site.repeats);
        QCOMPARE(site.secondWindowBytes, leak);
        QCOMPARE(std::string(categoryName(site.key.category)), truth["leak_category"].get<std::string>());
        std::vector<std::string> frames;
        for (const auto& frame : truth["leak_site_frames"])
            frames.push_back(frame.get<std::string>());
        QCOMPARE(site.key.frames, frames);
    }

    // The report's comparison section: present only with a comparison, every input string escaped.
    void reportSectionEscapes()
    {
        const char* hostile = "stack=\"<script>alert(1)</script>.py:f&x:7\";train.py:train_step:40";
        const std::string text = trainingRun({}) + "alloc evil 5MiB " + hostile + "\n";
        const auto snapshot = test::buildSnapshot(text);
        QVERIFY(snapshot);
        const Comparison comparison = compareSnapshots(analyze({}), analyzeSnapshot(snapshot));
        QVERIFY(!comparison.newSites().empty());
        Case input;
        input.snapshots.push_back(snapshot);
        input.inputs.push_back({ "b.pickle", InputKind::Snapshot, std::nullopt, 0 });
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(report::buildHtmlReport(input, analysis).find("id=\"comparison\"") == std::string::npos);
        report::ReportOptions options;
        options.comparison = &comparison;
        const std::string html = report::buildHtmlReport(input, analysis, options);
        QVERIFY(html.find("<section id=\"comparison\">") != std::string::npos);
        QVERIFY(html.find("<script>") == std::string::npos);
        QVERIFY(html.find("&lt;script&gt;alert(1)&lt;/script&gt;.py:7:f&amp;x") != std::string::npos);
        QVERIFY(html.find("New in B (1)") != std::string::npos);
    }

    // Two real runs of one script (cs336 systems assignment, context 128 vs 512): the sites
    // match and the longer context needs more at its peak.
    void corpusPair()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString directory = test::corpusDir() + QStringLiteral("/snapshots/");
        const auto open = [&](const char* name) {
            const QByteArray bytes = test::readFile(directory + QLatin1String(name));
            if (bytes.isEmpty())
                return std::optional<SnapshotAnalysis>();
            SnapshotReadResult read = readSnapshot(std::string_view(bytes.constData(), size_t(bytes.size())));
            if (!read.snapshot)
                return std::optional<SnapshotAnalysis>();
            return std::optional<SnapshotAnalysis>(analyzeSnapshot(read.snapshot));
        };
        const auto a = open("kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep_.pickle");
        const auto b = open("kkaitlyn111__cs336-a2-systems__memory_ctx512_fullstep_.pickle");
        if (!a || !b)
            QSKIP("the cs336 ctx128/ctx512 pair is not in ../shared/corpus");
        const Comparison comparison = compareSnapshots(*a, *b);
        qInfo("%s", comparison.summary.c_str());
        QVERIFY(comparison.b.peak.allocatedBytes > comparison.a.peak.allocatedBytes);
        size_t matched = 0;
        for (const ComparedSite& site : comparison.sites)
            matched += !site.isNew() && !site.vanished();
        QVERIFY2(matched * 2 > comparison.sites.size(), "most sites of one script match across two runs");
        QVERIFY(!comparison.summary.empty());
    }
};

QTEST_GUILESS_MAIN(TestCompare)
#include "tst_compare.moc"
