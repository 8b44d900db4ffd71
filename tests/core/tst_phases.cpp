#include "common/analysisfixtures.h"
#include "common/tracebuilder.h"
#include "core/analysis/snapshotanalysis.h"

#include <QTest>

using namespace oomlens;

namespace {

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

class TestPhases : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void frameOrders_data()
    {
        // Python-only stacks, and C++ frames first with Python frames last (stacks='all').
        QTest::addColumn<QString>("stack");
        QTest::addColumn<int>("phase");
        QTest::newRow("python forward")
            << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;train.py:main:9" << int(Phase::Forward);
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
        QTest::newRow("python-only checkpoint recompute")
            << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;"
               "torch/utils/checkpoint.py:recompute_fn:1480;torch/utils/checkpoint.py:unpack_hook:1110"
            << int(Phase::Backward);
        QTest::newRow("checkpoint call in forward")
            << "model.py:forward:3;torch/utils/checkpoint.py:checkpoint:488;model.py:forward:20;"
               "torch/nn/modules/module.py:_call_impl:1750;train.py:main:9"
            << int(Phase::Forward);
        QTest::newRow("optimizer")
            << "torch/optim/adamw.py:_single_tensor_adamw:300;torch/optim/optimizer.py:wrapper:493"
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

        // Closure-based optimizers run forward and backward inside optimizer.step(): the
        // innermost decisive frame decides, and decorate_context there is the closure's
        // @enable_grad or the step's own @no_grad, never an eval pass.
        const QString adamStep = QStringLiteral(
            "torch/optim/adam.py:step:205;torch/optim/optimizer.py:_use_grad:79;torch/optim/optimizer.py:wrapper:484;"
            "lightning/pytorch/core/optimizer.py:step:154;lightning/pytorch/trainer/"
            "trainer.py:fit:544;train.py:main:20");
        const QString closure = QStringLiteral("lightning/pytorch/loops/optimization/automatic.py:closure:138;torch/"
                                               "utils/_contextlib.py:decorate_context:116;"
                                               "lightning/pytorch/loops/optimization/automatic.py:__call__:146;"
                                               "lightning/pytorch/plugins/precision/precision.py:_wrap_closure:108;")
            + adamStep;
        QTest::newRow("lightning forward in closure")
            << QStringLiteral("dit.py:forward:80;torch/nn/modules/module.py:_call_impl:1750;lit.py:training_step:30;"
                              "lightning/pytorch/strategies/strategy.py:training_step:390;")
                + closure
            << int(Phase::Forward);
        QTest::newRow("lightning forward, C++ frames first")
            << QStringLiteral(
                   "??:at::native::empty_cuda(c10::ArrayRef<long>):0;"
                   "python_nn_functions.cpp:torch::autograd::THPVariable_linear(_object*, _object*, _object*):0;"
                   "torch/nn/modules/linear.py:forward:116;??:_PyEval_EvalFrameDefault:0;"
                   "torch/nn/modules/module.py:_call_impl:1750;lit.py:training_step:30;")
                + closure
            << int(Phase::Forward);
        QTest::newRow("lightning backward in closure")
            << QStringLiteral("torch/autograd/graph.py:_engine_run_backward:744;torch/_tensor.py:backward:521;"
                              "lightning/pytorch/core/module.py:backward:1068;"
                              "lightning/pytorch/loops/optimization/automatic.py:backward_fn:241;")
                + closure
            << int(Phase::Backward);
        QTest::newRow("lightning zero_grad in closure")
            << QStringLiteral("torch/optim/optimizer.py:zero_grad:950;"
                              "lightning/pytorch/loops/optimization/automatic.py:zero_grad_fn:230;")
                + closure
            << int(Phase::Optimizer);
        QTest::newRow("lightning adam update")
            << QStringLiteral("torch/optim/adam.py:_single_tensor_adam:400;") + adamStep << int(Phase::Optimizer);
        QTest::newRow("lbfgs closure under @no_grad step")
            << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;train.py:closure:30;"
               "torch/utils/_contextlib.py:decorate_context:116;torch/optim/lbfgs.py:step:330;"
               "torch/utils/_contextlib.py:decorate_context:116;torch/optim/optimizer.py:wrapper:484;train.py:main:40"
            << int(Phase::Forward);
        QTest::newRow("lbfgs own update") << "torch/optim/lbfgs.py:_add_grad:270;torch/optim/lbfgs.py:step:400;"
                                             "torch/utils/_contextlib.py:decorate_context:116;train.py:main:40"
                                          << int(Phase::Optimizer);
        QTest::newRow("sam closure backward")
            << "??:torch::autograd::Engine::evaluate_function:0;torch/_tensor.py:backward:521;train.py:closure:33;"
               "sam.py:step:60;torch/utils/_contextlib.py:decorate_context:116;train.py:main:40"
            << int(Phase::Backward);
        QTest::newRow("optimizer step in a post-accumulate-grad hook")
            << "torch/optim/adam.py:_single_tensor_adam:400;torch/optim/adam.py:step:220;train.py:optimizer_hook:20;"
               "??:torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&):0;"
               "??:torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&):0"
            << int(Phase::Optimizer);
        // Megatron's schedules call the engine themselves (custom_backward), not Tensor.backward.
        QTest::newRow("megatron backward_step") << "megatron/core/tensor_parallel/layers.py:backward:512;"
                                                   "megatron/core/pipeline_parallel/schedules.py:custom_backward:140;"
                                                   "megatron/core/pipeline_parallel/schedules.py:backward_step:380;"
                                                   "megatron/training/training.py:train_step:1180"
                                                << int(Phase::Backward);
        QTest::newRow("validation inside the fit loop")
            << "model.py:forward:3;torch/nn/modules/module.py:_call_impl:1750;lit.py:validation_step:50;"
               "torch/utils/_contextlib.py:decorate_context:116;lightning/pytorch/loops/evaluation_loop.py:run:140;"
               "lightning/pytorch/trainer/trainer.py:fit:544"
            << int(Phase::Eval);
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

    void framelessAfterForwardIsBackward()
    {
        // stacks='python' without any Tensor.backward frame: the engine thread's allocations
        // carry no frames, and the forward's own frameless frees do not end the forward.
        const std::string text = "alloc f 4MiB fwd\nalloc t 1MiB fwd\nfree t none\nalloc f2 4MiB fwd\n"
                                 "alloc l 4KiB loss\nalloc g 4MiB none\nfree f none\nalloc s 1MiB none\n"
                                 "free s none\nalloc o 1MiB opt\nalloc e 1MiB none\n";
        QCOMPARE(phaseOf(text, "f2"), Phase::Forward);
        QCOMPARE(phaseOf(text, "l"), Phase::Forward);
        QCOMPARE(phaseOf(text, "g"), Phase::Backward);
        QCOMPARE(phaseOf(text, "s"), Phase::Backward);
        QCOMPARE(phaseOf(text, "o"), Phase::Optimizer);
        QCOMPARE(phaseOf(text, "e"), Phase::Optimizer); // frameless after the step is not backward
    }

    void framelessOomAfterForwardIsBackward()
    {
        // The OOM is the only frameless event: the first gradient the engine asks for.
        const auto result = test::analyzeTrace("alloc w 64MiB load\nalloc f 8MiB fwd\nalloc l 4KiB loss\n"
                                               "oom 8MiB free=1MiB none\n");
        const auto* d = result.primary();
        QCOMPARE(d->ooms.size(), size_t(1));
        QCOMPARE(d->ooms[0].phase, Phase::Backward);
    }

    void framelessStepsWithoutBackwardFrames()
    {
        // forward -> frameless backward -> optimizer, three times: three steps.
        std::string text = "alloc w 64MiB load\n";
        for (int i = 0; i < 3; ++i) {
            const auto n = std::to_string(i);
            text += "alloc in" + n + " 1MiB data\nalloc f" + n + " 8MiB fwd\nalloc g" + n + " 4MiB none\nfree f" + n
                + " none\nalloc u" + n + " 1MiB opt\nfree u" + n + " opt\nfree g" + n + " zero\nfree in" + n
                + " none\n";
        }
        const auto result = test::analyzeTrace(text);
        QCOMPARE(result.primary()->stepCount, 3);
        QCOMPARE(phaseOf(text, "g1"), Phase::Backward);
        QCOMPARE(stepOf(text, "g1"), 2);
        QCOMPARE(stepOf(text, "f2"), 3);
    }

    void noFramesRecordedStaysUnknown()
    {
        // stacks recording off: frameless says nothing, there is no forward to follow.
        const auto result = test::analyzeTrace("alloc a 1MiB none\nalloc b 1MiB none\nfree a none\n");
        QCOMPARE(result.primary()->eventPhase.back(), Phase::Unknown);
        QCOMPARE(result.primary()->stepCount, 0);
    }

    void allocContextFreesAreNotEvidence()
    {
        // With context='alloc' a free carries its allocation's (forward) stack.
        const std::string text = "context alloc\nalloc f 4MiB fwd\nalloc g 4KiB bwd\nalloc e 1MiB none\nfree f\n";
        const auto result = test::analyzeTrace(text);
        const auto* d = result.primary();
        QCOMPARE(d->eventPhase.back(), Phase::Backward);
        QCOMPARE(d->allocations[0].category, Category::Activations);
    }

    void releasedSegmentsAreNotEvidence()
    {
        // The allocator releases a cached segment with the context it was first mapped in when no
        // request's context is at hand (empty_cache, context='alloc'): here a backward's. The
        // forward before it goes on: the loose loop code after it is the loss, not the next batch.
        const std::string text = "segment s0 0x7f0000000000 64MiB large\n"
                                 "alloc f 4MiB fwd\nsegment_free s0 bwd\nalloc l 4KiB stack=train.py:main:9\n";
        const auto result = test::analyzeTrace(text);
        const auto* d = result.primary();
        QCOMPARE(d->eventPhase[1], Phase::Forward); // the segment_free event itself
        QCOMPARE(phaseOf(text, "l"), Phase::Forward);
    }

    void trainerEvaluationLoopIsEval()
    {
        // Hugging Face Trainer's prediction_step runs the model under torch.no_grad(), and
        // evaluation_loop gathers its outputs; stacks cut short show neither the module call nor
        // a no_grad frame. The trace holds evaluation only, releasing the training step's cached
        // segments (their backward frames) on the way: nothing here is backward.
        const std::string predict
            = "stack=transformers/trainer.py:prediction_step:4470;"
              "transformers/trainer.py:evaluation_loop:4254;transformers/trainer.py:evaluate:4100";
        const std::string gather = "stack=transformers/trainer_pt_utils.py:add:347;"
                                   "transformers/trainer.py:evaluation_loop:4283;transformers/trainer.py:evaluate:4100";
        const std::string text = "segment s0 0x7f0000000000 64MiB large\n"
                                 "alloc h1 70MiB "
            + predict + "\nfree h1 none\nalloc o1 600MiB " + predict + "\nalloc k1 600MiB " + gather
            + "\nfree o1 none\nsegment_free s0 bwd\nalloc h2 70MiB " + predict + "\n";
        QCOMPARE(phaseOf(text, "h1"), Phase::Eval);
        QCOMPARE(phaseOf(text, "k1"), Phase::Eval);
        QCOMPARE(phaseOf(text, "h2"), Phase::Eval);
        const auto result = test::analyzeTrace(text);
        for (const PhaseSpan& span : result.primary()->phaseSpans)
            QCOMPARE(span.phase, Phase::Eval);
    }

    void evaluationBetweenStepsStartsNoStep()
    {
        // Trainer evaluates after step 1 (evaluate every eval_steps): its frames name it, model
        // call or not. Step 2 starts where its data follows step 1's optimizer, evaluation in
        // between; the evaluation belongs to step 1.
        const std::string predict
            = "\"stack=transformers/trainer.py:_prepare_input:3644;"
              "transformers/trainer.py:prediction_step:4464;"
              "transformers/trainer.py:evaluation_loop:4245;transformers/trainer.py:evaluate:4051\"";
        const std::string text = "alloc in1 1MiB data\nalloc f1 4MiB fwd\nalloc b1 4MiB bwd\nfree f1 bwd\nfree b1 bwd\n"
                                 "alloc o1 1MiB opt\nfree o1 opt\nfree in1 none\n"
                                 "alloc e1 1MiB "
            + predict + "\nalloc e2 4MiB eval\nfree e2 eval\nfree e1 none\n"
            + "alloc in2 1MiB data\nalloc f2 4MiB fwd\noom 4MiB free=1MiB bwd\n";
        QCOMPARE(phaseOf(text, "e1"), Phase::Eval);
        QCOMPARE(stepOf(text, "e1"), 1);
        QCOMPARE(stepOf(text, "e2"), 1);
        QCOMPARE(stepOf(text, "in2"), 2);
        QCOMPARE(stepOf(text, "f2"), 2);
        QCOMPARE(test::analyzeTrace(text).primary()->stepCount, 2);
    }

    void stepsFromPattern_data()
    {
        QTest::addColumn<QString>("forward");
        QTest::addColumn<QString>("backward");
        QTest::addColumn<QString>("optimizer");
        QTest::newRow("python") << "fwd"
                                << "bwd"
                                << "opt";
        QTest::newRow("cpp") << "fwdcpp"
                             << "bwdcpp"
                             << "opt";
    }

    void stepsFromPattern()
    {
        QFETCH(QString, forward);
        QFETCH(QString, backward);
        QFETCH(QString, optimizer);
        const std::string text
            = steps(3, forward.toUtf8().constData(), backward.toUtf8().constData(), optimizer.toUtf8().constData());
        const auto result = test::analyzeTrace(text);
        QCOMPARE(result.primary()->stepCount, 3);
        QCOMPARE(stepOf(text, "f0"), 1);
        QCOMPARE(stepOf(text, "in1"), 2);
        QCOMPARE(stepOf(text, "o2"), 3);
    }

    void truncatedTraceStartsInStepZero()
    {
        std::string text = steps(3, "fwd", "bwdcpp", "opt") + "ringbuffer 20\n";
        const auto result = test::analyzeTrace(text);
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
        const auto result = test::analyzeTrace(text);
        QCOMPARE(result.primary()->stepCount, 4);
        QCOMPARE(stepOf(text, "b2"), 3);
    }

    void optimizerAnnotationWindow()
    {
        const std::string text
            = "alloc f 1MiB fwd\nannotate Optimizer.step#AdamW.step stage=START\n"
              "alloc m 1MiB stack=optimizers.py:step:82\nannotate Optimizer.step#AdamW.step stage=END\n";
        QCOMPARE(phaseOf(text, "m"), Phase::Optimizer);
    }

    void forwardOnlyPasses()
    {
        // Three inference passes: the model's top-level forward restarts at an earlier line.
        std::string text;
        for (int i = 0; i < 3; ++i) {
            const auto n = std::to_string(i);
            for (int line : { 10, 12, 14 })
                text += "alloc p" + n + "_" + std::to_string(line) + " 1MiB stack=layer.py:forward:5;model.py:forward:"
                    + std::to_string(line) + ";torch/nn/modules/module.py:_call_impl:1750;bench.py:main:3\n";
        }
        const auto result = test::analyzeTrace(text);
        QCOMPARE(result.primary()->stepCount, 3);
        QCOMPARE(stepOf(text, "p1_10"), 2);
        QCOMPARE(stepOf(text, "p2_14"), 3);
    }

    void lightningSteps()
    {
        // Lightning: zero_grad, forward and backward in the closure, then the update, per step.
        std::string text = "alloc w 64MiB load\n";
        for (int i = 0; i < 3; ++i) {
            const auto n = std::to_string(i);
            text += "alloc in" + n + " 1MiB data\nalloc z" + n + " 4KiB lzero\nfree z" + n + " lzero\n";
            text += "alloc a" + n + " 8MiB lfwd\nalloc b" + n + " 8MiB lfwd\nalloc g" + n + " 8MiB lbwd\n";
            text += "free a" + n + " lbwd\nfree b" + n + " lbwd\nalloc u" + n + " 1MiB lopt\nfree u" + n + " lopt\n";
            text += "free g" + n + " lzero\nfree in" + n + " none\n";
        }
        const auto result = test::analyzeTrace(text);
        QCOMPARE(result.primary()->stepCount, 3);
        QCOMPARE(phaseOf(text, "a1"), Phase::Forward);
        QCOMPARE(phaseOf(text, "g1"), Phase::Backward);
        QCOMPARE(phaseOf(text, "u1"), Phase::Optimizer);
        QCOMPARE(stepOf(text, "a0"), 1);
        QCOMPARE(stepOf(text, "b2"), 3);
    }

    void closureOptimizerWindowIsNotEvidence()
    {
        // The Optimizer.step annotation spans the whole closure. Frameless events inside it (the
        // autograd thread under stacks='python') continue the backward, they are not optimizer.
        const std::string text = "annotate Optimizer.step#Adam.step stage=START\nalloc f 8MiB lfwd\n"
                                 "alloc g 8MiB lbwd\nalloc e 4MiB none\nfree f none\nalloc u 1MiB lopt\n"
                                 "annotate Optimizer.step#Adam.step stage=END\nalloc x 1MiB none\n";
        QCOMPARE(phaseOf(text, "f"), Phase::Forward);
        QCOMPARE(phaseOf(text, "e"), Phase::Backward);
        QCOMPARE(phaseOf(text, "u"), Phase::Optimizer);
    }

    void optimizerWindowsFoundAmongMany()
    {
        // Windows are looked up by binary search: many steps, frameless events in and out.
        std::string text;
        for (int i = 0; i < 50; ++i) {
            const auto n = std::to_string(i);
            text += "alloc f" + n + " 1MiB fwd\nfree f" + n + " fwd\nannotate Optimizer.step#SGD.step stage=START\n"
                + "alloc m" + n + " 1MiB none\nannotate Optimizer.step#SGD.step stage=END\nfree m" + n + " none\n";
        }
        QCOMPARE(phaseOf(text, "m0"), Phase::Optimizer);
        QCOMPARE(phaseOf(text, "m27"), Phase::Optimizer);
        QCOMPARE(phaseOf(text, "m49"), Phase::Optimizer);
        QCOMPARE(phaseOf(text, "f30"), Phase::Forward);
    }

    void phaseSpansCoverTrace()
    {
        const auto result = test::analyzeTrace(steps(2, "fwd", "bwd", "opt"));
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
