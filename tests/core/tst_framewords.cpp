#include "common/tracebuilder.h"
#include "core/analysis/framewords.h"
#include "core/analysis/stackfeatures.h"
#include "core/analysis/tracebackphase.h"
#include "core/phase.h"

#include <QTest>

#include <string>
#include <vector>

using namespace oomlens;

// One vocabulary for Python frames: the same frames, recorded by a snapshot as an allocation's
// stack or printed as an OOM's traceback, say the same phase.
namespace {

struct PyFrame
{
    std::string file;
    std::string function;
};

// The phase a snapshot gives an allocation made under `frames` (innermost first).
Phase snapshotPhase(const std::vector<PyFrame>& frames)
{
    std::string stack;
    for (size_t i = 0; i < frames.size(); ++i)
        stack += (i ? ";" : "") + frames[i].file + ":" + frames[i].function + ":" + std::to_string(10 + i);
    std::string error;
    const auto snapshot = test::buildSnapshot("alloc a 1MiB fwd stack=\"" + stack + "\"\n", &error);
    if (!snapshot) {
        qWarning("%s", error.c_str());
        return Phase::Unknown;
    }
    StackFeatures features(*snapshot);
    for (const TraceEvent& event : snapshot->traces.at(0).events) {
        if (event.action == TraceAction::Alloc)
            return features.phase(event.stack);
    }
    return Phase::Unknown;
}

// The phase a traceback ending in an OOM under the same frames shows (printed outermost first).
Phase tracebackPhase(const std::vector<PyFrame>& frames)
{
    TracebackInfo info;
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame)
        info.frames.push_back({ frame->file, 10, frame->function, "" });
    info.exceptionLine = "torch.OutOfMemoryError: CUDA out of memory.";
    decideTracebackPhase(info);
    return info.phase;
}

const char* name(Phase phase)
{
    static std::string text;
    text = std::string(phaseName(phase));
    return text.c_str();
}

constexpr const char* site = "/usr/lib/python3.11/site-packages/";

} // namespace

class TestFrameWords : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void samePhaseFromSnapshotAndTraceback_data()
    {
        QTest::addColumn<std::vector<PyFrame>>("frames");
        QTest::addColumn<Phase>("expected");
        const std::string s = site;
        const PyFrame moduleCall { s + "torch/nn/modules/module.py", "_call_impl" };
        const PyFrame forward { "model.py", "forward" };
        const PyFrame linear { s + "torch/nn/modules/linear.py", "forward" };
        QTest::newRow("training forward") << std::vector<PyFrame> { linear, moduleCall, forward, moduleCall,
            { "train.py", "train_step" } } << Phase::Forward;
        // Hugging Face Trainer's evaluation loop runs the model under no_grad.
        QTest::newRow("Trainer prediction_step")
            << std::vector<PyFrame> { linear, moduleCall, { s + "transformers/trainer.py", "prediction_step" },
                   { s + "transformers/trainer.py", "evaluation_loop" }, { s + "transformers/trainer.py", "evaluate" } }
            << Phase::Eval;
        QTest::newRow("generate") << std::vector<PyFrame> { linear, moduleCall,
            { s + "transformers/generation/utils.py", "_sample" },
            { s + "transformers/generation/utils.py", "generate" }, { "chat.py", "main" } }
                                  << Phase::Eval;
        // A library function named like evaluation inside the forward is the forward's own work
        // (dynamic shapes, distributions' sampling): only the user's files are read by prefixes.
        QTest::newRow("library eval-like name in forward")
            << std::vector<PyFrame> { { s + "torch/fx/experimental/symbolic_shapes.py", "evaluate_expr" }, forward,
                   moduleCall, { "train.py", "train_step" } }
            << Phase::Forward;
        QTest::newRow("user evaluation") << std::vector<PyFrame> { linear, moduleCall, { "train.py", "run_validation" },
            { "train.py", "main" } } << Phase::Eval;
        // Lightning runs the training step's forward inside optimizer.step(closure).
        QTest::newRow("closure forward inside optimizer.step") << std::vector<PyFrame> { linear, moduleCall,
            { "model.py", "training_step" }, { s + "lightning/pytorch/loops/optimization/automatic.py", "closure" },
            { s + "torch/optim/optimizer.py", "wrapper" } } << Phase::Forward;
        QTest::newRow("optimizer update")
            << std::vector<PyFrame> { { s + "torch/optim/adamw.py", "_multi_tensor_adamw" },
                   { s + "torch/optim/adamw.py", "step" }, { "train.py", "main" } }
            << Phase::Optimizer;
        QTest::newRow("gradient clipping")
            << std::vector<PyFrame> { { s + "torch/nn/utils/clip_grad.py", "clip_grad_norm_" }, { "train.py", "main" } }
            << Phase::Optimizer;
        QTest::newRow("Tensor.backward") << std::vector<PyFrame> {
            { s + "torch/autograd/graph.py", "_engine_run_backward" }, { s + "torch/_tensor.py", "backward" },
            { "train.py", "main" }
        } << Phase::Backward;
        QTest::newRow("Accelerator.backward") << std::vector<PyFrame> { { s + "accelerate/accelerator.py", "backward" },
            { "train.py", "main" } } << Phase::Backward;
        // DeepSpeed's engine steps the optimizer once while it is built: set-up, not training.
        QTest::newRow("DeepSpeed initialize_optimizer_states")
            << std::vector<PyFrame> { { s + "torch/optim/adam.py", "step" },
                   { s + "deepspeed/runtime/zero/stage_1_and_2.py", "initialize_optimizer_states" },
                   { s + "deepspeed/runtime/engine.py", "__init__" }, { "train.py", "main" } }
            << Phase::Load;
        QTest::newRow("from_pretrained") << std::vector<PyFrame> { { s + "torch/nn/modules/module.py", "_apply" },
            { s + "transformers/modeling_utils.py", "from_pretrained" }, { "train.py", "main" } }
                                         << Phase::Load;
        QTest::newRow("PEFT merge_and_unload")
            << std::vector<PyFrame> { { s + "peft/tuners/lora/model.py", "_unload_and_optionally_merge" },
                   { s + "peft/tuners/lora/model.py", "merge_and_unload" }, { "export.py", "main" } }
            << Phase::Load;
        QTest::newRow("collate") << std::vector<PyFrame> {
            { s + "torch/utils/data/_utils/collate.py", "default_collate" },
            { s + "torch/utils/data/dataloader.py", "__next__" }, { "train.py", "main" }
        } << Phase::Data;
    }

    void samePhaseFromSnapshotAndTraceback()
    {
        QFETCH(std::vector<PyFrame>, frames);
        QFETCH(Phase, expected);
        QCOMPARE(name(snapshotPhase(frames)), name(expected));
        QCOMPARE(name(tracebackPhase(frames)), name(expected));
    }

    // Stacks whose frames show more than one kind of work: the same run recorded as a snapshot's
    // allocation stack and printed as an OOM's traceback names one phase, the one that was running.
    void nestedWorkRanksAlike_data()
    {
        QTest::addColumn<std::vector<PyFrame>>("frames");
        QTest::addColumn<Phase>("expected");
        const std::string s = site;
        const PyFrame moduleCall { s + "torch/nn/modules/module.py", "_call_impl" };
        const PyFrame linear { s + "torch/nn/modules/linear.py", "forward" };
        const PyFrame main { "train.py", "main" };
        const PyFrame collate { s + "torch/utils/data/_utils/collate.py", "default_collate" };
        const PyFrame next { s + "torch/utils/data/dataloader.py", "__next__" };
        const PyFrame engine { s + "torch/autograd/graph.py", "_engine_run_backward" };
        const PyFrame tensorBackward { s + "torch/_tensor.py", "backward" };
        // Lightning calls training_step from its wrapper module's forward: a batch fetched there
        // is still input data.
        QTest::newRow("DataLoader inside the training step's forward") << std::vector<PyFrame> { collate, next,
            { "model.py", "training_step" }, { s + "lightning/pytorch/overrides/base.py", "forward" }, moduleCall,
            main } << Phase::Data;
        // A collate function that runs a model to build the batch is running that model.
        QTest::newRow("forward inside a collate function")
            << std::vector<PyFrame> { linear, moduleCall, { "data.py", "collate_with_features" }, next, main }
            << Phase::Forward;
        // The evaluation loop's own batch is input data; its model call is evaluation.
        QTest::newRow("batch fetched by Trainer's evaluation loop") << std::vector<PyFrame> { collate, next,
            { s + "transformers/trainer.py", "evaluation_loop" }, { s + "transformers/trainer.py", "evaluate" }, main }
                                                                    << Phase::Data;
        QTest::newRow("forward under a user's @no_grad function") << std::vector<PyFrame> { linear, moduleCall,
            { "train.py", "score" }, { s + "torch/utils/_contextlib.py", "decorate_context" }, main }
                                                                  << Phase::Eval;
        QTest::newRow("evaluation's own code")
            << std::vector<PyFrame> { { "train.py", "compute_metrics" }, main } << Phase::Eval;
        // A lazy module materialises its weights in its first forward (_infer_parameters ->
        // reset_parameters -> nn.init): what is allocated there is weights.
        QTest::newRow("lazy module's weights made inside the forward") << std::vector<PyFrame> {
            { s + "torch/nn/init.py", "kaiming_uniform_" }, { s + "torch/nn/modules/linear.py", "reset_parameters" },
            { s + "torch/nn/modules/linear.py", "initialize_parameters" },
            { s + "torch/nn/modules/lazy.py", "_infer_parameters" }, moduleCall, main
        } << Phase::Load;
        QTest::newRow("checkpoint loaded inside validation")
            << std::vector<PyFrame> { { s + "torch/serialization.py", "load" }, { "train.py", "run_validation" }, main }
            << Phase::Load;
        // An optimizer stepped from a post-accumulate-grad hook runs inside backward: the step's
        // state and arithmetic are the optimizer's.
        QTest::newRow("optimizer step inside backward") << std::vector<PyFrame> {
            { s + "torch/optim/adamw.py", "_multi_tensor_adamw" }, { s + "torch/optim/adamw.py", "step" },
            { "train.py", "optimizer_hook" }, engine, tensorBackward, main
        } << Phase::Optimizer;
        QTest::newRow("backward inside optimizer.step(closure)") << std::vector<PyFrame> { engine, tensorBackward,
            { "train.py", "closure" }, { s + "torch/optim/lbfgs.py", "step" }, main }
                                                                 << Phase::Backward;
        // Activation checkpointing re-runs the forward inside backward.
        QTest::newRow("forward re-run inside backward") << std::vector<PyFrame> { linear, moduleCall,
            { s + "torch/utils/checkpoint.py", "recompute_fn" }, engine, tensorBackward, main }
                                                        << Phase::Backward;
        // A gradient penalty calls the engine from the forward.
        QTest::newRow("backward inside the forward") << std::vector<PyFrame> { engine,
            { s + "torch/autograd/__init__.py", "grad" }, { "model.py", "forward" }, moduleCall, main }
                                                     << Phase::Backward;
        // torch.set_default_device puts torch.utils._device's hook inside every factory call.
        QTest::newRow("forward under torch.set_default_device") << std::vector<PyFrame> {
            { s + "torch/utils/_device.py", "__torch_function__" }, { "model.py", "forward" }, moduleCall, main
        } << Phase::Forward;
        QTest::newRow("model built under torch.device")
            << std::vector<PyFrame> { { s + "torch/utils/_device.py", "__torch_function__" },
                   { s + "torch/nn/modules/linear.py", "__init__" }, { "model.py", "__init__" }, main }
            << Phase::Load;
    }

    void nestedWorkRanksAlike()
    {
        QFETCH(std::vector<PyFrame>, frames);
        QFETCH(Phase, expected);
        QCOMPARE(name(snapshotPhase(frames)), name(expected));
        QCOMPARE(name(tracebackPhase(frames)), name(expected));
    }

    void pathsMatchWithEitherSeparator()
    {
        QVERIFY(frameWords("C:\\Python\\Lib\\site-packages\\torch\\optim\\adam.py", "step") & WordOptimizer);
        QVERIFY(frameWords("torch/optim/adam.py", "step") & WordOptimizer);
        QVERIFY(frameWords("C:\\envs\\x\\Lib\\site-packages\\torch\\_tensor.py", "backward") & WordBackward);
        QVERIFY(frameWords("C:\\envs\\x\\Lib\\site-packages\\transformers\\trainer.py", "evaluate") & WordFramework);
    }

    void frameworkFilesAreNotReadByPrefixes()
    {
        QVERIFY(frameWords("eval.py", "evaluate_step") & WordEvaluation);
        QVERIFY(frameWords("my_project/sampling.py", "sample_images") & WordEvaluation);
        QVERIFY(!(frameWords("/opt/conda/lib/python3.10/site-packages/torch/distributions/normal.py", "sample")
            & WordEvaluation));
        QVERIFY(!(frameWords("/usr/lib/python3/dist-packages/foo/args.py", "validate_args") & WordEvaluation));
        // Python's builtin eval is no evaluation loop.
        QVERIFY(!(frameWords("train.py", "eval") & WordEvaluation));
        // Nor is CPython's own C function, which the symbolizer may leave without a file.
        QVERIFY(!(frameWords("", "run_eval_code_obj") & WordEvaluation));
        // The user's own batch builder is input data; a library's function of the same name is not read.
        QVERIFY(frameWords("pretrain_gpt.py", "get_batch") & WordData);
        QVERIFY(!(frameWords("/x/site-packages/megatron/training/utils.py", "get_batch_on_this_cp_rank") & WordData));
    }

    void checkpointRecomputationIsBackward()
    {
        const uint32_t words = frameWords("/x/site-packages/torch/utils/checkpoint.py", "recompute_fn");
        QVERIFY(words & WordCheckpointing);
        QVERIFY(words & WordRecompute);
        QVERIFY(words & WordBackward);
        QVERIFY(!(frameWords("/x/site-packages/torch/utils/checkpoint.py", "checkpoint") & WordBackward));
    }
};

QTEST_GUILESS_MAIN(TestFrameWords)
#include "tst_framewords.moc"
