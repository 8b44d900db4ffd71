#include "common/testutil.h"
#include "core/planner/memoryplan.h"
#include "parsers/inputloader.h"
#include "views/casewidget.h"
#include "views/mainwindow.h"
#include "views/whatifbars.h"
#include "views/whatifview.h"

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>

using namespace oomlens;
using namespace oomlens::planner;

// Drives the What-if controls offscreen as a user would and checks that the plan, the bars'
// numbers and the verdict follow on the spot.
class TestWhatIfView : public QObject
{
    Q_OBJECT

    template <typename T> static T* control(WhatIfView& view, const char* name)
    {
        T* widget = view.findChild<T*>(QString::fromLatin1(name));
        if (!widget)
            qFatal("no control %s", name);
        return widget;
    }

    // Seed 000's GPT-2 Large at batch 8 x 1024 in mixed fp16 with eager attention, on a 40 GB card.
    static void seedSetup(WhatIfView& view)
    {
        view.setModel(QStringLiteral("gpt2-large"));
        TrainingSetup setup;
        setup.microBatch = 8;
        setup.sequence = 1024;
        setup.precision = Precision::MixedFp16;
        setup.attention = Attention::Eager;
        view.setSetup(setup);
        view.setCard(QStringLiteral("40GB"));
    }

private Q_SLOTS:
    void controlsChangeThePlan()
    {
        WhatIfView view;
        view.show();
        seedSetup(view);
        QVERIFY(!view.result().fits.value());
        QVERIFY2(view.verdict().contains(QStringLiteral("Short by")), qPrintable(view.verdict()));
        const uint64_t before = view.result().shown.totalPerGpu;

        // Checkpointing through its combo box: the activations collapse and it fits.
        QSignalSpy changed(&view, &WhatIfView::planChanged);
        control<QComboBox>(view, "checkpointing")->setCurrentIndex(1);
        QCOMPARE(changed.count(), 1);
        QVERIFY(view.result().shown.totalPerGpu < before);
        QVERIFY(view.result().fits.value());
        QVERIFY2(view.verdict().contains(QStringLiteral("Fits with")), qPrintable(view.verdict()));

        // Back to no checkpointing; halving the micro-batch with the spin box fits too (the seed's answer).
        control<QComboBox>(view, "checkpointing")->setCurrentIndex(0);
        QVERIFY(!view.result().fits.value());
        control<QSpinBox>(view, "batch")->setValue(4);
        QVERIFY(view.result().fits.value());
        QCOMPARE(view.setup().microBatch, 4);

        // A bigger card, more GPUs with ZeRO: bands per GPU shrink.
        control<QComboBox>(view, "model")->setCurrentText(QStringLiteral("llama-2-70b"));
        QVERIFY(!view.result().fits.value());
        control<QSpinBox>(view, "gpus")->setValue(8);
        control<QComboBox>(view, "zero")->setCurrentIndex(3);
        control<QComboBox>(view, "card")->setCurrentIndex(4); // 80 GB
        control<QSpinBox>(view, "batch")->setValue(1);
        control<QComboBox>(view, "checkpointing")->setCurrentIndex(1);
        QVERIFY(!view.result().fits.value());
        control<QComboBox>(view, "offload")->setCurrentIndex(1);
        QVERIFY2(view.result().fits.value(), qPrintable(view.verdict()));
        QCOMPARE(view.result().setup.zeroStage, 3);
    }

    // The LoRA targets choice: fewer adapted projections, fewer trainable parameters.
    void loraTargetsControlTheAdapters()
    {
        WhatIfView view;
        view.setModel(QStringLiteral("llama-2-7b"));
        control<QSpinBox>(view, "loraRank")->setValue(8);
        QCOMPARE(view.result().shown.trainableParameters, uint64_t(19988480)); // all linear layers
        control<QComboBox>(view, "loraTargets")->setCurrentIndex(2); // q and v
        QCOMPARE(view.result().shown.trainableParameters, uint64_t(4194304));
        QCOMPARE(view.setup().loraTargets, LoraTargets::QueryValue);
        control<QSpinBox>(view, "loraRank")->setValue(0); // full fine-tuning: targets do not apply
        QVERIFY(view.result().setupProblem.empty());
    }

    // Pipeline parallelism draws a bar per stage; the controls reach the plan's layout.
    void pipelineStagesAreBars()
    {
        WhatIfView view;
        view.show();
        view.setModel(QStringLiteral("llama-2-70b"));
        TrainingSetup setup;
        setup.sequence = 4096;
        setup.gpusPerNode = 8;
        setup.nodes = 4;
        setup.parallel.tensor = 8;
        setup.parallel.sequenceParallel = true;
        setup.parallel.pipeline = 4;
        view.setSetup(setup);
        QCOMPARE(control<QSpinBox>(view, "pp")->value(), 4);
        QCOMPARE(view.result().shown.stages.size(), size_t { 4 });
        auto* bars = view.findChild<WhatIfBars*>();
        QVERIFY(bars);
        QCOMPARE(bars->barCount(), 4);
        QVERIFY2(view.verdict().contains(QStringLiteral("stage 0")), qPrintable(view.verdict()));
        // One pipeline stage fewer: the bars follow, and the busiest GPU holds more.
        const uint64_t four = view.result().shown.totalPerGpu;
        control<QSpinBox>(view, "pp")->setValue(2);
        QCOMPARE(bars->barCount(), 2);
        QVERIFY(view.result().shown.totalPerGpu > four);
        QCOMPARE(view.setup().parallel.pipeline, 2);
        // Back to one stage: one bar per GPU again.
        control<QSpinBox>(view, "pp")->setValue(1);
        QCOMPARE(bars->barCount(), 8);
    }

    // Serving: the KV cache becomes a band and the details give vLLM's tokens.
    void servingShowsTheKvCache()
    {
        WhatIfView view;
        view.show();
        view.setModel(QStringLiteral("llama-2-70b"));
        view.setCard(QStringLiteral("80GB"));
        TrainingSetup setup;
        setup.gpusPerNode = 4;
        setup.parallel.tensor = 4;
        setup.microBatch = 16;
        setup.sequence = 4096;
        view.setSetup(setup);
        control<QCheckBox>(view, "inference")->setChecked(true);
        QVERIFY(view.setup().inference);
        QVERIFY(view.result().shown.serving);
        QCOMPARE(view.result().shown.perGpu[static_cast<size_t>(Band::KvCache)], 16ull * 4096 * 80 * 1024);
        QVERIFY(view.result().serving);
        const QString details = view.findChild<QLabel*>(QStringLiteral("details"))->text();
        QVERIFY2(details.contains(QStringLiteral("tokens of KV cache")), qPrintable(details));
        // The config pane gives the vLLM command line instead of a training configuration.
        QVERIFY2(view.configText().startsWith(QStringLiteral("vllm serve llama-2-70b --tensor-parallel-size 4")),
            qPrintable(view.configText()));
        const uint64_t bf16 = view.result().shown.totalPerGpu;
        control<QComboBox>(view, "kvDtype")->setCurrentText(QStringLiteral("fp8"));
        QCOMPARE(view.result().shown.perGpu[static_cast<size_t>(Band::KvCache)], 16ull * 4096 * 40 * 1024);
        QVERIFY(view.result().shown.totalPerGpu < bf16);
    }

    void impossibleSetupSaysWhy()
    {
        WhatIfView view;
        view.setModel(QStringLiteral("llama-2-7b"));
        control<QComboBox>(view, "offload")->setCurrentIndex(2); // all, at ZeRO-0
        QVERIFY(!view.result().setupProblem.empty());
        QVERIFY(view.verdict().contains(QStringLiteral("ZeRO")));
        control<QComboBox>(view, "zero")->setCurrentIndex(3);
        QVERIFY(view.result().setupProblem.empty());
    }

    // With a measured run the bars start from the measured bands and changes are projected from them.
    void startsFromTheMeasuredBands()
    {
        WhatIfView view;
        seedSetup(view);
        control<QSpinBox>(view, "batch")->setValue(4);
        const MemoryPlan formula = view.result().formula;
        auto analysis = std::make_shared<SnapshotAnalysis>();
        DeviceAnalysis device;
        device.device = 0;
        const auto formulaBand = [&](Band band) { return formula.perGpu[static_cast<size_t>(band)]; };
        device.categoriesAtPeak[static_cast<size_t>(Category::Parameters)] = formulaBand(Band::Parameters);
        device.categoriesAtPeak[static_cast<size_t>(Category::Gradients)] = formulaBand(Band::Gradients);
        device.categoriesAtPeak[static_cast<size_t>(Category::OptimizerState)] = formulaBand(Band::OptimizerState);
        const uint64_t activations = formulaBand(Band::Activations) * 3 / 2; // the run saved 1.5x the formula
        device.categoriesAtPeak[static_cast<size_t>(Category::Activations)] = activations;
        device.peakAllocatedBytes = formulaBand(Band::Parameters) + formulaBand(Band::Gradients)
            + formulaBand(Band::OptimizerState) + activations;
        device.peakReservedBytes = device.peakAllocatedBytes;
        analysis->devices.push_back(device);
        view.setMeasured(analysis, 0);

        QVERIFY(view.calibration().has_value());
        QCOMPARE(view.result().shown.perGpu[static_cast<size_t>(Band::Activations)], activations);
        QVERIFY(control<QLabel>(view, "calibration")->text().contains(QStringLiteral("this run measured")));
        QVERIFY(control<QLabel>(view, "calibration")->text().contains(QStringLiteral("1.50x")));

        // Half the batch: half the measured activations, not half the formula's.
        control<QSpinBox>(view, "batch")->setValue(2);
        const double projected
            = static_cast<double>(view.result().shown.perGpu[static_cast<size_t>(Band::Activations)]);
        QVERIFY(std::abs(projected - static_cast<double>(activations) / 2) / projected < 0.02);

        // Each band's tooltip tells the measured starting point and its ratio.
        auto* bars = view.findChild<WhatIfBars*>();
        QVERIFY(bars);
        const QString activationsTip = bars->bandToolTip(Band::Activations);
        QVERIFY2(activationsTip.contains(QStringLiteral("1.50x")), qPrintable(activationsTip));
        QVERIFY(activationsTip.contains(QStringLiteral("the snapshot held")));
        QVERIFY2(bars->bandToolTip(Band::Parameters).contains(QStringLiteral("1.00x")),
            qPrintable(bars->bandToolTip(Band::Parameters)));
        QVERIFY(bars->bandToolTip(Band::Temporaries).contains(QStringLiteral("no ratio")));
        // Bands are named as the timeline names their categories, and as the report's plan does.
        QVERIFY(bars->bandToolTip(Band::OptimizerState).startsWith(QStringLiteral("Optimizer state: ")));
        QVERIFY(bars->bandToolTip(Band::Overhead).startsWith(QStringLiteral("CUDA context and allocator slack: ")));
        // Hovering finds the band: the bottom of a bar is the parameters, the first legend row
        // (top band first) the overhead, the margin nothing.
        bars->resize(420, 320);
        const int fontHeight = bars->fontMetrics().height();
        QCOMPARE(bars->bandAt(QPoint(bars->width() / 3, bars->height() - fontHeight - 8 - 2)),
            std::optional(Band::Parameters));
        QCOMPARE(bars->bandAt(QPoint(bars->width() - 20, fontHeight + 2)), std::optional(Band::Overhead));
        QCOMPARE(bars->bandAt(QPoint(1, 1)), std::nullopt);

        view.setMeasured(nullptr, 0);
        QVERIFY(!view.calibration().has_value());
        QVERIFY(!bars->bandToolTip(Band::Activations).contains(QStringLiteral("snapshot")));
    }

    // No model is assumed: the view asks for one, and plans nothing until it has it.
    void noDefaultModel()
    {
        WhatIfView view;
        QVERIFY(!view.hasModel());
        QCOMPARE(view.verdict(), QStringLiteral("Which model?"));
        QVERIFY(view.result().shown.totalPerGpu == 0);
        QVERIFY(view.configText().isEmpty());
        QVERIFY(!control<QComboBox>(view, "optimizer")->isEnabled());
        view.setParameterCount(QStringLiteral("1.3B"));
        QVERIFY(view.hasModel());
        QCOMPARE(view.result().shown.parameterCount, uint64_t(1'300'000'000));
        QVERIFY(control<QComboBox>(view, "optimizer")->isEnabled());
        view.setParameterCount(QStringLiteral("several"));
        QVERIFY(!view.hasModel());
    }

    // A model whose parameters no precision can make the run's is planned but not calibrated:
    // a run that held 120 MiB of fp32 parameters (31M) is not LLaMA-2 7B.
    void unrelatedModelIsNotCalibrated()
    {
        auto analysis = std::make_shared<SnapshotAnalysis>();
        DeviceAnalysis device;
        device.categoriesAtPeak[static_cast<size_t>(Category::Parameters)] = 31'000'000ull * 4;
        device.categoriesAtPeak[static_cast<size_t>(Category::Activations)] = 2ull << 30;
        device.peakAllocatedBytes = 31'000'000ull * 4 + (2ull << 30);
        device.peakReservedBytes = device.peakAllocatedBytes;
        analysis->devices.push_back(device);
        WhatIfView view;
        view.setMeasured(analysis, 0);
        QVERIFY(!view.hasModel());
        QVERIFY(view.findChild<WhatIfBars*>()->bands() == measuredBands(device));
        const QString details = control<QLabel>(view, "details")->text();
        QVERIFY2(details.contains(QStringLiteral("about 31M parameters in fp32")), qPrintable(details));

        view.setModel(QStringLiteral("llama-2-7b"));
        QVERIFY(!view.calibration());
        QVERIFY2(view.mismatch().contains(QStringLiteral("not the run's model")), qPrintable(view.mismatch()));
        QVERIFY(control<QLabel>(view, "calibration")->text().startsWith(QStringLiteral("Not calibrated")));

        view.setParameterCount(QStringLiteral("31M"));
        QVERIFY(view.calibration());
        QVERIFY(view.mismatch().isEmpty());
        // No layer sizes: the activations stay as measured instead of vanishing from the projection.
        QCOMPARE(view.result().shown.perGpu[static_cast<size_t>(Band::Activations)], 2ull << 30);
    }

    // every:K checkpointing: the K spin box is live only for "every K-th block", and the plan
    // lands between none and full.
    void everyKthBlockControl()
    {
        WhatIfView view;
        seedSetup(view);
        auto* checkpointing = control<QComboBox>(view, "checkpointing");
        auto* every = control<QSpinBox>(view, "checkpointEvery");
        QVERIFY(!every->isEnabled());
        const uint64_t none = view.result().shown.totalPerGpu;
        checkpointing->setCurrentIndex(1);
        const uint64_t full = view.result().shown.totalPerGpu;
        checkpointing->setCurrentIndex(2);
        QVERIFY(every->isEnabled());
        every->setValue(4);
        QCOMPARE(view.setup().checkpointing, Checkpointing::EveryK);
        QCOMPARE(view.setup().checkpointEvery, 4);
        const uint64_t everyFour = view.result().shown.totalPerGpu;
        QVERIFY(full < everyFour && everyFour < none);
        every->setValue(2);
        QVERIFY(view.result().shown.totalPerGpu < everyFour); // more blocks checkpointed
        // setSetup round-trips it.
        TrainingSetup setup = view.setup();
        setup.checkpointEvery = 6;
        view.setSetup(setup);
        QCOMPARE(every->value(), 6);
        QCOMPARE(view.result().setup.checkpointEvery, 6);
    }

    // The config pane shows ds_config.json, the FSDP snippet or the accelerate YAML for the set-up
    // on screen, and "Copy config" puts it on the clipboard.
    void configPaneFollowsTheSetup()
    {
        WhatIfView view;
        seedSetup(view);
        control<QSpinBox>(view, "gpus")->setValue(8);
        control<QComboBox>(view, "zero")->setCurrentIndex(3);
        QVERIFY(view.configText().contains(QStringLiteral("\"stage\": 3")));
        control<QComboBox>(view, "configKind")->setCurrentIndex(1);
        QVERIFY2(
            view.configText().contains(QStringLiteral("ShardingStrategy.FULL_SHARD")), qPrintable(view.configText()));
        QVERIFY(view.configText().contains(QStringLiteral("torch.float16")));
        control<QComboBox>(view, "zero")->setCurrentIndex(2);
        QVERIFY(view.configText().contains(QStringLiteral("SHARD_GRAD_OP")));
        control<QComboBox>(view, "configKind")->setCurrentIndex(2);
        QVERIFY(view.configText().contains(QStringLiteral("num_processes: 8")));
        QVERIFY(view.configText().contains(QStringLiteral("mixed_precision: fp16")));
        QCOMPARE(control<QPlainTextEdit>(view, "config")->toPlainText(), view.configText());
        control<QPushButton>(view, "copyConfig")->click();
        QCOMPARE(QGuiApplication::clipboard()->text(), view.configText());

        // Paged 8-bit AdamW is a choice of the optimizer box.
        control<QComboBox>(view, "optimizer")->setCurrentText(QStringLiteral("adamw-paged-8bit"));
        QCOMPARE(view.setup().optimizer, OptimizerKind::AdamW8bitPaged);
        QVERIFY(view.result().shown.pageableBytes > 0);
    }

    // A Hugging Face config.json is an input like any other, told apart by its content: the
    // case lists it as a model config and the planner plans that model.
    void configJsonIsRecognisedByContent()
    {
        const QByteArray config
            = test::readFile(test::testDataDir() + QStringLiteral("/planner/gpt2-large.config.json"));
        Case input;
        addInput(input, "renamed.txt", std::string_view(config.constData(), size_t(config.size())));
        QCOMPARE(input.inputs.size(), size_t(1));
        QCOMPARE(input.inputs.front().kind, InputKind::ModelConfig);
        QVERIFY(!input.inputs.front().error);
        QCOMPARE(input.models.size(), size_t(1));
        QCOMPARE(input.models.front().layers, 36);

        // Naming an architecture without its dimensions: one clear error, not "no OOM message".
        Case broken;
        addInput(broken, "config.json", R"({"model_type": "llama", "vocab_size": 32000})");
        QCOMPARE(broken.inputs.front().kind, InputKind::ModelConfig);
        QVERIFY(broken.inputs.front().error);
        QVERIFY(broken.inputs.front().error->find("hidden") != std::string::npos);
        QVERIFY(broken.models.empty());
    }

    // Opened alone in the app, a config.json lands on the What-if tab with its model chosen.
    void openedConfigPlansItsModel()
    {
        MainWindow window;
        window.resize(1200, 800);
        window.show();
        window.openFiles({ test::testDataDir() + QStringLiteral("/planner/gpt2-large.config.json") });
        QVERIFY(QTest::qWaitFor([&] { return !window.isLoading(); }, 60000));
        CaseWidget* view = window.currentCase();
        QVERIFY(view);
        QCOMPARE(view->tabs()->currentIndex(), int(CaseWidget::WhatIfTab));
        QVERIFY(control<QComboBox>(*view->whatIf(), "model")
                    ->currentText()
                    .contains(QStringLiteral("gpt2-large.config.json")));
        // 774M parameters: the plan is GPT-2 Large's, not the default preset's (LLaMA-2 7B).
        const uint64_t parameters = view->whatIf()->result().shown.parameterCount;
        QVERIFY2(parameters > 700'000'000 && parameters < 800'000'000, std::to_string(parameters).c_str());
        QVERIFY(!view->whatIf()->edited()); // opening is not the user's edit
    }
};

QTEST_MAIN(TestWhatIfView)
#include "tst_whatifview.moc"
