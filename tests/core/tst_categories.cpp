#include "common/analysisfixtures.h"
#include "common/tracebuilder.h"
#include "core/analysis/livequery.h"
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/units.h"
#include "opening/categoryrulesfile.h"
#include "parsers/categoryrulesparser.h"

#include <QTemporaryFile>
#include <QTest>

#include <algorithm>
#include <functional>

using namespace oomlens;

namespace {

const char* trainingStep = R"(
before w 400MiB load
before q 64MiB none
before r 32MiB none
alloc x 10MiB data
alloc act 100MiB fwd
alloc tmp 50MiB fwd
free tmp fwd
alloc l 4KiB loss
alloc g0 4KiB bwd
alloc gw 400MiB grad
alloc bt 30MiB bwdcpp
free bt bwdcpp
free act bwdcpp
free r bwdcpp
free g0 bwdcpp
alloc m 400MiB optinit
alloc s 10MiB opt
free s opt
)";

// The allocation a name got: by its alloc event, or by address for those older than the trace.
const Allocation* byName(const SnapshotAnalysis& result, const char* text, const char* name)
{
    test::TraceBuilder builder;
    builder.add(text);
    const int64_t event = builder.allocEvent(name);
    const uint64_t address = builder.address(name);
    for (const auto& a : result.primary()->allocations) {
        if (event >= 0 ? a.allocEvent == event : (a.olderThanTrace() && a.address == address))
            return &a;
    }
    return nullptr;
}

} // namespace

class TestCategories : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void builtInRules_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("category");
        QTest::addColumn<QString>("reasonPart");
        QTest::newRow("load, kept") << "w"
                                    << "parameters"
                                    << "model loading";
        QTest::newRow("older, no frames, kept") << "q"
                                                << "parameters"
                                                << "lower confidence";
        QTest::newRow("older, no frames, freed in backward") << "r"
                                                             << "activations"
                                                             << "freed in backward";
        QTest::newRow("batch to device") << "x"
                                         << "inputs"
                                         << "batch";
        QTest::newRow("forward, freed in backward") << "act"
                                                    << "activations"
                                                    << "saved in forward";
        QTest::newRow("forward, freed in forward") << "tmp"
                                                   << "temporaries"
                                                   << "within the forward";
        QTest::newRow("AccumulateGrad") << "gw"
                                        << "gradients"
                                        << "AccumulateGrad";
        QTest::newRow("backward scratch") << "bt"
                                          << "temporaries"
                                          << "backward scratch";
        QTest::newRow("optimizer init") << "m"
                                        << "optimizer_state"
                                        << "_init_group";
        QTest::newRow("optimizer scratch") << "s"
                                           << "temporaries"
                                           << "optimizer step";
        QTest::newRow("loss after forward") << "l"
                                            << "activations"
                                            << "forward";
    }

    void builtInRules()
    {
        QFETCH(QString, name);
        QFETCH(QString, category);
        QFETCH(QString, reasonPart);
        const auto result = test::analyzeTrace(trainingStep);
        const Allocation* a = byName(result, trainingStep, name.toUtf8().constData());
        QVERIFY(a);
        QCOMPARE(QString::fromUtf8(categoryName(a->category).data()), category);
        const std::string& reason = result.primary()->reasons[a->reason];
        QVERIFY2(QString::fromStdString(reason).contains(reasonPart), reason.c_str());
    }

    void peakAddsUp()
    {
        const auto result = test::analyzeTrace(trainingStep);
        const DeviceAnalysis* d = result.primary();
        uint64_t sum = 0;
        for (uint64_t v : d->categoriesAtPeak)
            sum += v;
        QCOMPARE(sum, d->peakAllocatedBytes);
        // At the peak: parameters w+q, gradients gw, optimizer m, inputs x, the loss (4 KiB).
        QCOMPARE(d->categoriesAtPeak[size_t(Category::OptimizerState)], 400 * MiB);
        QCOMPARE(d->categoriesAtPeak[size_t(Category::Gradients)], 400 * MiB);
        QCOMPARE(d->categoriesAtPeak[size_t(Category::Parameters)], 464 * MiB);
        QCOMPARE(staticBytes(d->categoriesAtPeak), 1264 * MiB);
        QCOMPARE(liveByCategory(*d, d->peakEvent), d->categoriesAtPeak);
    }

    // The oom analysis reads the categories at every oom event in one pass (liveByCategoryAt);
    // it must give what one point at a time and the timeline's series give, at any set of points.
    void liveAtManyPointsIsLiveAtEach()
    {
        const auto result = test::analyzeTrace(trainingStep);
        const DeviceAnalysis* d = result.primary();
        const TimelineSeries series(*d);
        std::vector<int64_t> every;
        for (int64_t e = -1; e < series.eventCount(); ++e)
            every.push_back(e);
        QVERIFY(every.size() > 10);
        const std::vector<CategoryBytes> atEvery = liveByCategoryAt(*d, every);
        QCOMPARE(atEvery.size(), every.size());
        for (size_t k = 0; k < every.size(); ++k) {
            QCOMPARE(atEvery[k], liveByCategory(*d, every[k]));
            QCOMPARE(atEvery[k], series.categoriesAt(every[k]));
        }
        std::vector<int64_t> some = { 2, 5, d->peakEvent, series.eventCount() - 1 };
        std::sort(some.begin(), some.end());
        const std::vector<CategoryBytes> atSome = liveByCategoryAt(*d, some);
        for (size_t k = 0; k < some.size(); ++k)
            QCOMPARE(atSome[k], liveByCategory(*d, some[k]));
        QVERIFY(liveByCategoryAt(*d, {}).empty());
    }

    // The series keeps a change of under 64 MiB in the change itself and reads a bigger one from
    // its allocation: both kinds, added and removed, at and around the limit, in every category.
    void seriesHoldsSmallAndBigChanges()
    {
        const auto result = test::analyzeTrace(R"(
before w 300MiB load
alloc x 65535KiB data
alloc a 64MiB fwd
alloc b 63MiB fwd
alloc g 65MiB grad
free a bwdcpp
alloc m 3GiB optinit
free x opt
free b bwdcpp
free w opt
alloc s 1KiB opt
free g opt
free m opt
)");
        const DeviceAnalysis* d = result.primary();
        const TimelineSeries series(*d);
        QCOMPARE(series.eventCount(), int64_t(d->eventAllocation.size()));
        for (int64_t e = -1; e < series.eventCount(); ++e)
            QCOMPARE(series.categoriesAt(e), liveByCategory(*d, e));
        QCOMPARE(series.maxAllocated(), d->peakAllocatedBytes);
        const auto points = series.downsample(TimelineSeries::evenBoundaries(0, series.eventCount(), 3));
        for (const TimelineSeries::Point& point : points)
            QCOMPARE(point.bytes, liveByCategory(*d, point.event));
    }

    void userRulesWin_data()
    {
        QTest::addColumn<QString>("rules");
        QTest::newRow("yaml scalar") << "optimizer_state: _single_tensor_adam";
        QTest::newRow("yaml flow list") << "optimizer_state: [nomatch, '_single_tensor_adam']";
        QTest::newRow("yaml block list") << "# custom\noptimizer_state:\n  - nomatch\n  - \"_single_tensor_adam\"\n";
        QTest::newRow("json list") << R"({"optimizer_state": ["_single_tensor_adam"]})";
        QTest::newRow("json scalar") << R"({"optimizer_state": "_single_tensor_adam"})";
    }

    void userRulesWin()
    {
        QFETCH(QString, rules);
        std::string error;
        const auto parsed = parseCategoryRules(rules.toStdString(), &error);
        QVERIFY2(parsed, error.c_str());
        AnalysisOptions options;
        options.rules = std::make_shared<const CategoryRules>(*parsed);
        const auto result = test::analyzeTrace(trainingStep, options);
        QVERIFY2(result.rulesError.empty(), result.rulesError.c_str());
        const Allocation* s = byName(result, trainingStep, "s");
        QCOMPARE(s->category, Category::OptimizerState);
        QVERIFY(QString::fromStdString(result.primary()->reasons[s->reason]).contains(QLatin1String("user rule")));
        // Rules only touch matching stacks.
        QCOMPARE(byName(result, trainingStep, "tmp")->category, Category::Temporaries);
    }

    void rulesFromFile()
    {
        QTemporaryFile file;
        QVERIFY(file.open());
        file.write("parameters: ['model\\.py']\n");
        file.close();
        AnalysisOptions options;
        setCategoryRules(options, file.fileName().toStdString());
        const auto result = test::analyzeTrace(trainingStep, options);
        QVERIFY2(result.rulesError.empty(), result.rulesError.c_str());
        QCOMPARE(byName(result, trainingStep, "act")->category, Category::Parameters);
    }

    void badRules_data()
    {
        QTest::addColumn<QString>("rules");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown category") << "weights: foo"
                                          << "unknown category 'weights'";
        QTest::newRow("bad regex") << "parameters: \"(unclosed\""
                                   << "invalid regular expression";
        QTest::newRow("bad json") << "{\"parameters\": [1]}"
                                  << "must list strings";
        QTest::newRow("no colon") << "parameters"
                                  << "expected 'category: regex'";
    }

    void badRules()
    {
        QFETCH(QString, rules);
        QFETCH(QString, message);
        std::string error;
        QVERIFY(!parseCategoryRules(rules.toStdString(), &error));
        QVERIFY2(QString::fromStdString(error).contains(message), error.c_str());
        // A rules file that cannot be used is reported with the analysis; the built-in
        // categories still apply.
        QTemporaryFile file;
        QVERIFY(file.open());
        file.write(rules.toUtf8());
        file.close();
        AnalysisOptions options;
        setCategoryRules(options, file.fileName().toStdString());
        QVERIFY(!options.rules);
        const auto result = test::analyzeTrace(trainingStep, options);
        QVERIFY2(QString::fromStdString(result.rulesError).contains(message), result.rulesError.c_str());
        QCOMPARE(byName(result, trainingStep, "s")->category, Category::Temporaries);
        AnalysisOptions missing;
        setCategoryRules(missing, "/nonexistent/rules.yaml");
        QVERIFY(!test::analyzeTrace(trainingStep, missing).rulesError.empty());
    }

    void evalRetainedOutputs()
    {
        const char* text = R"(
alloc o1 10MiB eval
alloc t1 5MiB eval
free t1 eval
alloc x 1MiB data
alloc o2 10MiB eval
)";
        const auto result = test::analyzeTrace(text);
        QCOMPARE(byName(result, text, "o1")->category, Category::Activations);
        QCOMPARE(byName(result, text, "t1")->category, Category::Temporaries);
        QCOMPARE(byName(result, text, "o1")->phase, Phase::Eval);
    }

    void lightningClosureStep()
    {
        // Lightning: the forward's activations live until backward inside optimizer.step();
        // they must band as activations, not optimizer state.
        const char* text = R"(
before w 400MiB load
alloc x 10MiB data
alloc act 800MiB lfwd
alloc tmp 50MiB lfwd
free tmp lfwd
alloc gw 400MiB grad
free act lbwd
alloc m 400MiB loptinit
alloc s 10MiB lopt
free s lopt
alloc act2 900MiB lfwd
)";
        const auto result = test::analyzeTrace(text);
        QCOMPARE(byName(result, text, "act")->category, Category::Activations);
        QCOMPARE(byName(result, text, "act")->phase, Phase::Forward);
        QCOMPARE(byName(result, text, "tmp")->category, Category::Temporaries);
        QCOMPARE(byName(result, text, "m")->category, Category::OptimizerState);
        QCOMPARE(byName(result, text, "s")->category, Category::Temporaries);
        QCOMPARE(byName(result, text, "act2")->category, Category::Activations);
        const DeviceAnalysis* d = result.primary();
        QCOMPARE(d->categoriesAtPeak[size_t(Category::Activations)], 900 * MiB);
        QCOMPARE(d->categoriesAtPeak[size_t(Category::OptimizerState)], 400 * MiB);
    }

    void framelessBackwardGradients()
    {
        // stacks='python': the engine thread records no frames. After a forward, what it makes
        // and keeps across steps is gradients; what it frees within the backward is scratch, and
        // the forward's memory freed there was saved activations.
        const char* text = R"(
alloc w 400MiB load
alloc x 10MiB data
alloc act 800MiB fwd
alloc l 4KiB loss
alloc gw 400MiB none
alloc bt 30MiB none
free bt none
free act none
alloc m 400MiB optinit
alloc s 10MiB opt
free s opt
free x none
alloc x2 10MiB data
alloc act2 900MiB fwd
)";
        const auto result = test::analyzeTrace(text);
        QCOMPARE(byName(result, text, "gw")->phase, Phase::Backward);
        QCOMPARE(byName(result, text, "gw")->category, Category::Gradients);
        QCOMPARE(byName(result, text, "bt")->category, Category::Temporaries);
        QCOMPARE(byName(result, text, "act")->category, Category::Activations);
        QCOMPARE(byName(result, text, "m")->category, Category::OptimizerState);
        QCOMPARE(result.primary()->stepCount, 2);
    }

    void olderFreedByTheUnwindingIsActivations()
    {
        // The ring buffer began mid-forward: the layers' saved inputs are older than the trace and
        // carry no frames. The out-of-memory error unwinds the step and drops its graph: what it
        // frees then was held for backward. Freed in forward before the failure, it stays unknown.
        const char* text = R"(
before w 400MiB load
before saved 224MiB none
before early 96MiB none
alloc act 224MiB fwd
free early fwd
oom 2GiB free=100MiB fwd
free saved none
free act none
)";
        const auto result = test::analyzeTrace(text);
        const Allocation* saved = byName(result, text, "saved");
        QVERIFY(saved);
        QCOMPARE(saved->category, Category::Activations);
        QVERIFY(result.primary()->reasons[saved->reason].find("unwound") != std::string::npos);
        QCOMPARE(byName(result, text, "early")->category, Category::Unknown);
    }

    void optimizerInBackwardHookIsOptimizerState()
    {
        // optimizer.step() from a post-accumulate-grad hook: AccumulateGrad is outside the step,
        // the state it creates is still optimizer state.
        const char* text = R"(
alloc act 100MiB fwd
alloc m 400MiB "stack=torch/optim/adam.py:_init_group:150;torch/optim/adam.py:step:213;train.py:hook:20;??:torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&):0;??:torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&):0"
alloc gw 400MiB grad
free act bwdcpp
)";
        const auto result = test::analyzeTrace(text);
        QCOMPARE(byName(result, text, "m")->category, Category::OptimizerState);
        QCOMPARE(byName(result, text, "gw")->category, Category::Gradients);
    }

    void callTreeAndTopStacks()
    {
        const auto result = test::analyzeTrace(trainingStep);
        const DeviceAnalysis* d = result.primary();
        const auto top = topStacks(*d, d->peakEvent, 3);
        QCOMPARE(top.size(), size_t(3));
        QVERIFY(top[0].bytes >= top[1].bytes && top[1].bytes >= top[2].bytes);
        const CallTreeNode tree = callTree(*result.snapshot, *d, d->peakEvent);
        QCOMPARE(tree.bytes, d->peakAllocatedBytes);
        uint64_t children = 0;
        for (const auto& c : tree.children)
            children += c.bytes;
        // Stacks with no frames (q) hang nowhere below the root.
        QCOMPARE(children, d->peakAllocatedBytes - 64 * MiB);
        // The unwinder's frames are hidden; the engine's are not.
        std::function<bool(const CallTreeNode&)> hasUnwind = [&](const CallTreeNode& n) {
            if (n.frame.isValid()
                && result.snapshot->strings->get(result.snapshot->frames->frame(n.frame).name).find("unwind::")
                    != std::string_view::npos)
                return true;
            return std::any_of(n.children.begin(), n.children.end(), hasUnwind);
        };
        QVERIFY(!hasUnwind(tree));
    }
};

QTEST_GUILESS_MAIN(TestCategories)
#include "tst_categories.moc"
