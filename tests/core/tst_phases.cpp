#include "core/analysis/snapshotanalysis.h"
#include "common/tracebuilder.h"

#include <QTest>

using namespace oomlens;

namespace {

SnapshotAnalysis analyze(const std::string& text)
{
    std::string error;
    auto snapshot = test::buildSnapshot(text, &error);
    if (!snapshot)
        qFatal("trace text: %s", error.c_str());
    return analyzeSnapshot(snapshot);
}

Phase phaseOf(const std::string& text, const char* name)
{
    test::TraceBuilder builder;
    builder.add(text);
    const auto result = analyzeSnapshot(builder.build());
    return result.primary()->eventPhase[static_cast<size_t>(builder.allocEvent(name))];
}

int32_t stepOf(const std::string& text, const char* name)
{
    test::TraceBuilder builder;
    builder.add(text);
    const auto result = analyzeSnapshot(builder.build());
    return result.primary()->eventStep[static_cast<size_t>(builder.allocEvent(name))];
}

std::string steps(int count, const char* forward, const char* backward, const char* optimizer)
{
    std::string text;
    for (int i = 0; i < count; ++i) {
        const auto n = std::to_string(i);
        text += "alloc in" + n + " 1MiB data\n";
        text += "alloc f" + n + " 4MiB " + forward + "\n";
        text += "alloc b" + n + " 4MiB " + backward + "\n";
        text += "free f" + n + " " + backward + "\n";
        text += "free b" + n + " " + backward + "\n";
        text += "alloc o" + n + " 1MiB " + optimizer + "\n";
        text += "free o" + n + " " + optimizer + "\n";
        text += "free in" + n + " none\n";
    }
    return text;
}

} // namespace

class TestPhases : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void frameOrders_data()
    {
        // Python-only stacks, and C++ frames first with Python frames last (stacks='all').
        QTest::addColumn<QString>("stack");
        QTest::addColumn<int>("phase");
        QTest::newRow("python forward") << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;train.py:main:9"
                                        << int(Phase::Forward);
        QTest::newRow("cpp then python forward")
            << "??:at::native::empty_cuda:0;??:torch::autograd::THPVariable_mm(_object*):0;model.py:forward:3;"
               "torch/nn/modules/module.py:_call_impl:1750;train.py:main:9"
            << int(Phase::Forward);
        QTest::newRow("python then cpp forward")
            << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;??:at::native::empty_cuda:0"
            << int(Phase::Forward);
        QTest::newRow("cpp engine") << "??:torch::autograd::generated::AddmmBackward0::apply:0;"
                                       "??:torch::autograd::Engine::thread_main:0"
                                    << int(Phase::Backward);
        QTest::newRow("engine then python") << "??:torch::autograd::Engine::evaluate_function:0;"
                                               "torch/_tensor.py:backward:521;train.py:main:9"
                                            << int(Phase::Backward);
        QTest::newRow("checkpoint recompute in backward")
            << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;"
               "torch/utils/checkpoint.py:unpack:1100;??:torch::autograd::Engine::thread_main:0"
            << int(Phase::Backward);
        QTest::newRow("optimizer") << "torch/optim/adamw.py:_single_tensor_adamw:300;torch/optim/optimizer.py:wrapper:493"
                                   << int(Phase::Optimizer);
        QTest::newRow("custom optimizer via wrapper")
            << "optimizers.py:step:82;/site-packages/torch/optim/optimizer.py:wrapper:493;train.py:main:9"
            << int(Phase::Optimizer);
        QTest::newRow("no_grad eval") << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;"
                                         "torch/utils/_contextlib.py:decorate_context:116;train.py:main:9"
                                      << int(Phase::Eval);
        QTest::newRow("generate") << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;"
                                     "transformers/generation/utils.py:generate:2000"
                                  << int(Phase::Eval);
        QTest::newRow("module to") << "torch/nn/modules/module.py:_apply:900;torch/nn/modules/module.py:to:1340"
                                   << int(Phase::Load);
        QTest::newRow("load_state_dict") << "torch/serialization.py:load:1000;train.py:main:9" << int(Phase::Load);
        QTest::newRow("dataloader") << "torch/utils/data/dataloader.py:__next__:630;train.py:main:9"
                                    << int(Phase::Data);
        QTest::newRow("tensor to outside forward")
            << "??:torch::autograd::THPVariable_to(_object*, _object*):0;train.py:main:9" << int(Phase::Data);
    }

    void frameOrders()
    {
        QFETCH(QString, stack);
        QFETCH(int, phase);
        const std::string text = "alloc a 1MiB \"stack=" + stack.toStdString() + "\"\n";
        QCOMPARE(int(phaseOf(text, "a")), phase);
    }

    void emptyStacksContinueBackward()
    {
        // stacks='python': the autograd thread records no frames at all.
        const std::string text = "alloc f 4MiB fwd\nalloc l 4KiB loss\nalloc g 4KiB bwd\nalloc e1 4MiB none\n"
                                 "free f none\nalloc o 1MiB opt\nalloc x 1MiB stack=train.py:main:9\n";
        QCOMPARE(phaseOf(text, "l"), Phase::Forward); // the loss, outside any module
        QCOMPARE(phaseOf(text, "e1"), Phase::Backward);
        QCOMPARE(phaseOf(text, "o"), Phase::Optimizer);
        QCOMPARE(phaseOf(text, "x"), Phase::Data); // loop code after the step: the next batch
    }

    void allocContextFreesAreNotEvidence()
    {
        // With context='alloc' a free carries its allocation's (forward) stack.
        const std::string text = "context alloc\nalloc f 4MiB fwd\nalloc g 4KiB bwd\nalloc e 1MiB none\nfree f\n";
        const auto result = analyze(text);
        const auto* d = result.primary();
        QCOMPARE(d->eventPhase.back(), Phase::Backward);
        QCOMPARE(d->allocations[0].category, Category::Activations);
    }

    void stepsFromPattern_data()
    {
        QTest::addColumn<QString>("forward");
        QTest::addColumn<QString>("backward");
        QTest::addColumn<QString>("optimizer");
        QTest::newRow("python") << "fwd" << "bwd" << "opt";
        QTest::newRow("cpp") << "fwdcpp" << "bwdcpp" << "opt";
    }

    void stepsFromPattern()
    {
        QFETCH(QString, forward);
        QFETCH(QString, backward);
        QFETCH(QString, optimizer);
        const std::string text = steps(3, forward.toUtf8().constData(), backward.toUtf8().constData(),
                                       optimizer.toUtf8().constData());
        const auto result = analyze(text);
        QCOMPARE(result.primary()->stepCount, 3);
        QCOMPARE(stepOf(text, "f0"), 1);
        QCOMPARE(stepOf(text, "in1"), 2);
        QCOMPARE(stepOf(text, "o2"), 3);
    }

    void truncatedTraceStartsInStepZero()
    {
        std::string text = steps(3, "fwd", "bwdcpp", "opt") + "ringbuffer 20\n";
        const auto result = analyze(text);
        const auto* d = result.primary();
        QVERIFY(d->traceTruncated);
        QCOMPARE(d->eventStep.front(), 0); // the tail of a step we did not see
        QCOMPARE(d->stepCount, 1);
    }

    void profilerStepAnnotations()
    {
        std::string text;
        for (int i = 0; i < 4; ++i) {
            const auto n = std::to_string(i);
            text += "annotate ProfilerStep#" + n + "\nalloc a" + n + " 1MiB fwd\nalloc b" + n + " 1MiB fwd\nfree a" + n
                + " fwd\nfree b" + n + " fwd\n";
        }
        const auto result = analyze(text);
        QCOMPARE(result.primary()->stepCount, 4);
        QCOMPARE(stepOf(text, "b2"), 3);
    }

    void optimizerAnnotationWindow()
    {
        const std::string text = "alloc f 1MiB fwd\nannotate Optimizer.step#AdamW.step stage=START\n"
                                 "alloc m 1MiB stack=optimizers.py:step:82\nannotate Optimizer.step#AdamW.step stage=END\n";
        QCOMPARE(phaseOf(text, "m"), Phase::Optimizer);
    }

    void forwardOnlyPasses()
    {
        // Three inference passes: the model's top-level forward restarts at an earlier line.
        std::string text;
        for (int i = 0; i < 3; ++i) {
            const auto n = std::to_string(i);
            for (int line : {10, 12, 14})
                text += "alloc p" + n + "_" + std::to_string(line) + " 1MiB stack=layer.py:forward:5;model.py:forward:"
                    + std::to_string(line) + ";torch/nn/modules/module.py:_call_impl:1750;bench.py:main:3\n";
        }
        const auto result = analyze(text);
        QCOMPARE(result.primary()->stepCount, 3);
        QCOMPARE(stepOf(text, "p1_10"), 2);
        QCOMPARE(stepOf(text, "p2_14"), 3);
    }

    void phaseSpansCoverTrace()
    {
        const auto result = analyze(steps(2, "fwd", "bwd", "opt"));
        const auto* d = result.primary();
        QVERIFY(!d->phaseSpans.empty());
        QCOMPARE(d->phaseSpans.front().firstEvent, int64_t(0));
        QCOMPARE(d->phaseSpans.back().lastEvent, int64_t(d->eventPhase.size()) - 1);
        for (size_t i = 1; i < d->phaseSpans.size(); ++i)
            QCOMPARE(d->phaseSpans[i].firstEvent, d->phaseSpans[i - 1].lastEvent + 1);
    }
};

QTEST_GUILESS_MAIN(TestPhases)
#include "tst_phases.moc"
