#include "common/testutil.h"
#include "core/planner/dsconfig.h"
#include "core/planner/fsdpconfig.h"
#include "core/planner/gpucards.h"
#include "core/planner/hfconfig.h"
#include "core/planner/memoryplan.h"
#include "core/planner/plancalibration.h"
#include "core/planner/planjson.h"
#include "core/planner/planladder.h"
#include "core/planner/planresult.h"
#include "core/planner/zeroestimators.h"
#include "core/units.h"

#include <QTest>

#include <cstdio>

using namespace oomlens;
using namespace oomlens::planner;

namespace {

// DeepSpeed prints its estimates as "%.2f" of bytes / 2**30 ("GB" in its tables).
QString gib(uint64_t bytes)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", static_cast<double>(bytes) / static_cast<double>(GiB));
    return QString::fromLatin1(buffer);
}

ModelSpec countOnly(uint64_t parameters, uint64_t largestLayer = 0)
{
    ModelSpec model;
    model.name = "count";
    model.parameters = parameters;
    model.largestLayer = largestLayer;
    return model;
}

uint64_t modelStates(const MemoryPlan& plan)
{
    return plan.perGpu[static_cast<size_t>(Band::Parameters)] + plan.perGpu[static_cast<size_t>(Band::Gradients)]
        + plan.perGpu[static_cast<size_t>(Band::OptimizerState)];
}

uint64_t band(const MemoryPlan& plan, Band which)
{
    return plan.perGpu[static_cast<size_t>(which)];
}

TrainingSetup zero(int stage, int gpus, Offload offload = Offload::None)
{
    TrainingSetup setup;
    setup.precision = Precision::MixedFp16;
    setup.zeroStage = stage;
    setup.gpusPerNode = gpus;
    setup.offload = offload;
    return setup;
}

ModelSpec preset(const char* name)
{
    const auto model = modelPreset(name);
    if (!model)
        qFatal("no preset %s", name);
    return *model;
}

uint64_t capacityOf(const char* card)
{
    return cardFromText(card).value().capacityBytes;
}

} // namespace

class TestPlanner : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // DeepSpeed's documentation (docs/code-docs/source/memory.rst), estimate_zero2_..._all_cold and
    // _all_live for t5-3b: 2851M parameters on 1 node x 8 GPUs.
    void deepSpeedZero2PublishedTable()
    {
        const uint64_t p = 2851000000ULL;
        const ZeroEstimate offload = deepSpeedZero2Estimate(p, 8, 1, true);
        QCOMPARE(gib(offload.gpuBytes), QStringLiteral("5.31"));
        QCOMPARE(gib(offload.cpuBytes), QStringLiteral("127.45"));
        // The documentation prints 15.93 GB without offload: 4·P + 16·P/N, from releases that
        // counted the 16-bit gradients whole. Today's estimator says 2·P + 18·P/N (the 16-bit
        // gradients are partitioned too, and the fp32 gradient copy is counted): 11.28.
        const ZeroEstimate none = deepSpeedZero2Estimate(p, 8, 1, false);
        QCOMPARE(gib(none.gpuBytes), QStringLiteral("11.28"));
        QCOMPARE(none.gpuBytes, 2 * p + 18 * p / 8);
        // The older figure is exactly what ZeRO-1 keeps: the planner's stage-1 bands.
        QCOMPARE(gib(modelStates(planMemory(countOnly(p), zero(1, 8)))), QStringLiteral("15.93"));
    }

    // The same page, estimate_zero3_..._all_cold(total_params=2851e6, largest_layer_params=32e6, 8 GPUs).
    void deepSpeedZero3PublishedTable()
    {
        const uint64_t p = 2851000000ULL;
        const uint64_t largest = 32000000ULL;
        const ZeroEstimate all = deepSpeedZero3Estimate(p, largest, 8, 1, true, true, true);
        QCOMPARE(gib(all.cpuBytes), QStringLiteral("71.69"));
        QCOMPARE(gib(all.gpuBytes), QStringLiteral("0.12"));
        QCOMPARE(gib(deepSpeedZero3Estimate(p, largest, 8, 1, true, true, false).cpuBytes), QStringLiteral("127.45"));
        const ZeroEstimate optimizer = deepSpeedZero3Estimate(p, largest, 8, 1, true, false, true);
        QCOMPARE(gib(optimizer.cpuBytes), QStringLiteral("63.72"));
        QCOMPARE(gib(optimizer.gpuBytes), QStringLiteral("0.78"));
        const ZeroEstimate none = deepSpeedZero3Estimate(p, largest, 8, 1, false, false, true);
        QCOMPARE(gib(none.cpuBytes), QStringLiteral("1.43"));
        QCOMPARE(gib(none.gpuBytes), QStringLiteral("6.09"));
        // The page's t5-large example, 737.67M parameters, 32.90M in the largest layer, 4 GPUs,
        // printed in MiB (>> 20): case 1 (nothing offloaded) 3291, case 2 (all) 125, case 3 (optimizer) 477.
        const uint64_t t5 = 737670000ULL;
        const uint64_t t5Largest = 32900000ULL;
        QCOMPARE(deepSpeedZero3Estimate(t5, t5Largest, 4, 1, false, false).gpuBytes >> 20, 3291ULL);
        QCOMPARE(deepSpeedZero3Estimate(t5, t5Largest, 4, 1, true, true).gpuBytes >> 20, 125ULL);
        QCOMPARE(deepSpeedZero3Estimate(t5, t5Largest, 4, 1, true, false).gpuBytes >> 20, 477ULL);
    }

    // The planner's bands add up to DeepSpeed's estimators for every stage, GPU count and
    // offload: one model of memory, not two.
    void bandsFollowDeepSpeed_data()
    {
        QTest::addColumn<qulonglong>("parameters");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<int>("nodes");
        QTest::newRow("1.3B on 1") << 1300000000ULL << 1 << 1;
        QTest::newRow("7B on 8") << 7000000000ULL << 8 << 1;
        QTest::newRow("13B on 4") << 13000000000ULL << 4 << 1;
        QTest::newRow("70B on 2x8") << 70000000000ULL << 8 << 2;
    }
    void bandsFollowDeepSpeed()
    {
        QFETCH(qulonglong, parameters);
        QFETCH(int, gpus);
        QFETCH(int, nodes);
        const uint64_t largest = parameters / 100;
        const ModelSpec model = countOnly(parameters, largest);
        const auto plan = [&](int stage, Offload offload) {
            TrainingSetup setup = zero(stage, gpus, offload);
            setup.nodes = nodes;
            return planMemory(model, setup);
        };
        // Integer division per band: a few bytes of rounding at most.
        const auto close = [](uint64_t a, uint64_t b) { return (a > b ? a - b : b - a) <= 16; };
        const MemoryPlan stage2 = plan(2, Offload::None);
        QVERIFY(close(modelStates(stage2), deepSpeedZero2Estimate(parameters, gpus, nodes, false).gpuBytes));
        QCOMPARE(stage2.hostBytes, deepSpeedZero2Estimate(parameters, gpus, nodes, false).cpuBytes);
        const MemoryPlan stage2Offload = plan(2, Offload::Optimizer);
        QCOMPARE(modelStates(stage2Offload), deepSpeedZero2Estimate(parameters, gpus, nodes, true).gpuBytes);
        QCOMPARE(stage2Offload.hostBytes, deepSpeedZero2Estimate(parameters, gpus, nodes, true).cpuBytes);
        const auto withGather = [](const MemoryPlan& p) { return modelStates(p) + band(p, Band::Temporaries); };
        QVERIFY(close(withGather(plan(3, Offload::None)),
            deepSpeedZero3Estimate(parameters, largest, gpus, nodes, false, false).gpuBytes));
        QVERIFY(close(withGather(plan(3, Offload::Optimizer)),
            deepSpeedZero3Estimate(parameters, largest, gpus, nodes, true, false).gpuBytes));
        QCOMPARE(withGather(plan(3, Offload::All)),
            deepSpeedZero3Estimate(parameters, largest, gpus, nodes, true, true).gpuBytes);
        QCOMPARE(plan(3, Offload::All).hostBytes,
            deepSpeedZero3Estimate(parameters, largest, gpus, nodes, true, true).cpuBytes);
        // product.md's example, ZeRO-2 over N GPUs: the 16-bit parameters stay whole (2·P) and
        // the rest shrinks with N.
        QVERIFY(band(stage2, Band::Parameters) == 2 * parameters);
    }

    // Hugging Face's "model memory anatomy": mixed-precision AdamW is 18 bytes per parameter
    // (6 weights: fp32 + the 16-bit copy, 4 fp32 gradients, 8 Adam), fp32 16, 8-bit AdamW
    // 6 + 4 + 2 = 12, SGD with momentum 6 + 4 + 4 = 14.
    void huggingFaceAnatomy()
    {
        const uint64_t p = 1000000000ULL;
        const ModelSpec model = countOnly(p);
        TrainingSetup setup;
        setup.precision = Precision::MixedBf16;
        QCOMPARE(modelStates(planMemory(model, setup)), 18 * p);
        setup.precision = Precision::Fp32;
        QCOMPARE(modelStates(planMemory(model, setup)), 16 * p);
        setup.precision = Precision::MixedFp16;
        setup.optimizer = OptimizerKind::AdamW8bit;
        QCOMPARE(modelStates(planMemory(model, setup)), 12 * p);
        setup.optimizer = OptimizerKind::Sgd;
        QCOMPARE(modelStates(planMemory(model, setup)), 14 * p);
    }

    void presetsCountTheirParameters_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<double>("billions");
        QTest::newRow("gpt2") << QStringLiteral("gpt2") << 0.1244;
        QTest::newRow("gpt2-large") << QStringLiteral("gpt2-large") << 0.774;
        QTest::newRow("llama-2-7b") << QStringLiteral("llama-2-7b") << 6.738;
        QTest::newRow("llama-2-70b") << QStringLiteral("llama-2-70b") << 68.977;
        QTest::newRow("llama-65b") << QStringLiteral("llama-65b") << 65.286;
        QTest::newRow("mistral-7b") << QStringLiteral("mistral-7b") << 7.242;
    }
    void presetsCountTheirParameters()
    {
        QFETCH(QString, name);
        QFETCH(double, billions);
        const double counted = static_cast<double>(preset(name.toLatin1().constData()).totalParameters()) / 1e9;
        QVERIFY2(std::abs(counted - billions) / billions < 0.002, qPrintable(QString::number(counted)));
    }

    void readsHuggingFaceConfigs()
    {
        const QByteArray gpt2 = test::readFile(test::testDataDir() + QStringLiteral("/planner/gpt2-large.config.json"));
        QVERIFY(looksLikeHfConfig(gpt2.toStdString()));
        const auto fromGpt2 = modelFromHfConfig(gpt2.toStdString()).model;
        QVERIFY(fromGpt2);
        QCOMPARE(fromGpt2->totalParameters(), preset("gpt2-large").totalParameters());
        QVERIFY(fromGpt2->dropout && fromGpt2->tiedEmbeddings && !fromGpt2->gatedMlp);

        const QByteArray llama
            = test::readFile(test::testDataDir() + QStringLiteral("/planner/llama-2-70b.config.json"));
        const auto fromLlama = modelFromHfConfig(llama.toStdString()).model;
        QVERIFY(fromLlama);
        QCOMPARE(fromLlama->totalParameters(), preset("llama-2-70b").totalParameters());
        QCOMPARE(fromLlama->kvHeadsOrHeads(), 8);
        QVERIFY(fromLlama->gatedMlp && !fromLlama->tiedEmbeddings && !fromLlama->dropout);

        QVERIFY(!looksLikeHfConfig(R"({"segments": [], "device_traces": []})"));
        QVERIFY(!modelFromHfConfig("not json").model);
        QVERIFY(!modelFromHfConfig(R"({"n_layer": 12})").error.empty());
        // Dimensions no model has (a hidden size of 10^8: 10^18 parameters) are one clear error,
        // not byte figures past 2^64.
        const auto absurd = modelFromHfConfig(
            R"({"model_type": "llama", "hidden_size": 102414336, "num_attention_heads": 32, "num_hidden_layers": 32})");
        QVERIFY(!absurd.model);
        QVERIFY(absurd.error.find("more than any model") != std::string::npos);
    }

    // Korthikanti et al.: a GPT block saves s·b·h·(34 + 5·a·s/h) bytes in 16-bit with dropout and
    // eager attention; SDPA drops the a·s² term; full checkpointing keeps one input per block plus
    // one block being recomputed. Korthikanti leaves out the norms' fp32 statistics (LayerNorm's
    // mean and reciprocal standard deviation, 2 norms x 8 bytes per token): the planner adds them.
    void activationsFollowKorthikanti()
    {
        const ModelSpec model = preset("gpt2-large");
        TrainingSetup setup;
        setup.microBatch = 8;
        setup.sequence = 1024;
        setup.precision = Precision::MixedFp16;
        setup.attention = Attention::Eager;
        const uint64_t s = 1024, b = 8, h = 1280, a = 20;
        const ActivationEstimate eager = estimateActivations(model, setup);
        const uint64_t normStatistics = s * b * 2 * 8;
        QCOMPARE(eager.perLayerBytes, s * b * h * 34 + 5 * a * s * s * b + normStatistics);
        QCOMPARE(eager.scoreBytesPerLayer, 5 * a * s * s * b);

        setup.attention = Attention::Sdpa;
        const ActivationEstimate sdpa = estimateActivations(model, setup);
        // + FlashAttention's fp32 log-sum-exp
        QCOMPARE(sdpa.perLayerBytes, s * b * h * 34 + 4 * a * s * b + normStatistics);

        setup.checkpointing = Checkpointing::Full;
        const ActivationEstimate checkpointed = estimateActivations(model, setup);
        QCOMPARE(checkpointed.savedBytes - checkpointed.logitsSavedBytes, 36 * s * b * h * 2 + sdpa.perLayerBytes);

        // Twice the batch, twice the activations; fp32 doubles the 2-byte elements.
        setup.checkpointing = Checkpointing::None;
        TrainingSetup doubled = setup;
        doubled.microBatch = 16;
        QCOMPARE(estimateActivations(model, doubled).savedBytes, 2 * sdpa.savedBytes);
    }

    // Seed 000's worked case: GPT-2 Large (774M) in mixed precision, batch 8 x 1024, on a 40 GB
    // A100 ("39.59 GiB total capacity").
    void seedGpt2LargeOnA100()
    {
        const ModelSpec model = preset("gpt2-large");
        TrainingSetup setup;
        setup.microBatch = 8;
        setup.sequence = 1024;
        setup.precision = Precision::MixedFp16;
        setup.attention = Attention::Eager; // the seed's era: attention scores materialized
        const uint64_t p = model.totalParameters();
        const MemoryPlan plan = planMemory(model, setup);
        QCOMPARE(formatBytes(capacityOf("a100-40gb")), std::string("39.59 GiB"));

        // The seed's table counts 16 bytes per parameter: 2 fp16 weights, 2 fp16 gradients, 12 for
        // Adam with fp32 master weights (1.55 + 1.55 + 9.3 GB). torch.autocast keeps the weights in
        // fp32, so their gradients are fp32 (4, not 2 bytes), and the fp16 copies it casts are held
        // for backward on top: 6 + 4 + 8 = 18 bytes, 1.55 GB more than the seed.
        const uint64_t seedStates = 2 * p + 2 * p + 12 * p;
        QCOMPARE(modelStates(plan), seedStates + 2 * p);
        QCOMPARE(band(plan, Band::OptimizerState),
            8 * p); // the seed's 9.3 GB less the master weights (counted as parameters)

        // The seed's estimator counts per layer b·a·s²·2 + b·s·4h·2 bytes (15.1 GB for 36 layers) and
        // its prose says ~28 GB. The precise count saves 5 bytes per score (softmax output, dropout
        // mask, dropped-out probabilities) and 34 bytes per token and hidden unit: 43.0 GB. Either
        // way activations, not weights, fill the card.
        const uint64_t seedRough = 36 * (8 * 20 * 1024ULL * 1024 * 2 + 8 * 1024ULL * 4 * 1280 * 2);
        QCOMPARE(seedRough / 10000000, 1509ULL); // 15.1 GB
        const uint64_t blocks = plan.activations.savedBytes - plan.activations.logitsSavedBytes;
        QCOMPARE(blocks / 100000000, 430ULL); // 43.0 GB
        QVERIFY(band(plan, Band::Activations) > 3 * modelStates(plan));
        QCOMPARE(plan.peakPhase, PeakPhase::Backward);

        // It does not fit, and the first rung of the ladder, half the micro-batch with gradient
        // accumulation, makes it fit; SDPA alone would too.
        const uint64_t capacity = capacityOf("40GB");
        QVERIFY(plan.totalPerGpu > capacity);
        const auto ladder = climbLadder(model, setup, capacity, formulaTotal(model));
        QVERIFY(!ladder.empty());
        QCOMPARE(ladder.front().id, std::string("micro_batch"));
        QCOMPARE(ladder.back().id, std::string("micro_batch"));
        QVERIFY(ladder.back().climbedTotal <= capacity);
        QCOMPARE(ladder.back().climbed.microBatch, 4);
        QCOMPARE(ladder.back().climbed.gradientAccumulation, 2);
        TrainingSetup sdpa = setup;
        sdpa.attention = Attention::Sdpa;
        QVERIFY(planMemory(model, sdpa).totalPerGpu <= capacity);
        QCOMPARE(maxMicroBatch(model, setup, capacity, formulaTotal(model)), 4);
    }

    // QLoRA (Dettmers et al. 2023): a 65B model fine-tunes on one 48 GB GPU; 16-bit full
    // fine-tuning needs more than 780 GB.
    void qloraFits65BOn48GB()
    {
        const ModelSpec model = preset("llama-65b");
        TrainingSetup setup;
        setup.microBatch = 1;
        setup.sequence = 512;
        setup.precision = Precision::MixedBf16;
        setup.checkpointing = Checkpointing::Full;
        setup.loraRank = 64;
        setup.quantizedBase = true;
        const MemoryPlan qlora = planMemory(model, setup);
        QVERIFY2(qlora.totalPerGpu <= capacityOf("48GB"), formatBytes(qlora.totalPerGpu).c_str());
        QVERIFY(qlora.totalPerGpu > capacityOf("40GB"));
        // The base's 4-bit NF4 block weights are about a quarter of 16-bit.
        QVERIFY(band(qlora, Band::Parameters) < model.totalParameters() * 6 / 10);

        TrainingSetup full = setup;
        full.loraRank = 0;
        full.quantizedBase = false;
        QVERIFY(modelStates(planMemory(model, full)) > 780000000000ULL);
        TrainingSetup lora16 = setup;
        lora16.quantizedBase = false;
        QVERIFY(planMemory(model, lora16).totalPerGpu > capacityOf("141GB") / 2);
    }

    // peft's own count for LLaMA-2-7B at rank 8: "trainable params: 4,194,304" with its default
    // q_proj/v_proj targets, 19,988,480 on every linear layer ("all-linear").
    void loraTargetsCountLikePeft()
    {
        const ModelSpec model = preset("llama-2-7b");
        QCOMPARE(model.loraParameters(8, LoraTargets::QueryValue), uint64_t(4194304));
        QCOMPARE(model.loraParameters(8, LoraTargets::AllLinear), uint64_t(19988480));
        QCOMPARE(model.loraParameters(8, LoraTargets::Attention), uint64_t(8388608));
        TrainingSetup setup;
        setup.loraRank = 8;
        setup.loraTargets = LoraTargets::QueryValue;
        QCOMPARE(planMemory(model, setup).trainableParameters, uint64_t(4194304));
        QVERIFY(planMemory(model, setup).totalPerGpu < [&] {
            TrainingSetup all = setup;
            all.loraTargets = LoraTargets::AllLinear;
            return planMemory(model, all).totalPerGpu;
        }());
        QCOMPARE(loraTargetsFromName("qv"), std::optional(LoraTargets::QueryValue));
        QCOMPARE(loraTargetsName(LoraTargets::Attention), std::string_view("attention"));
        TrainingSetup noRank;
        noRank.loraTargets = LoraTargets::Attention;
        QVERIFY(!setupProblem(noRank).empty());
    }

    // Seed 001's questions: 7B on four 80 GB GPUs with ZeRO-2, and 70B on eight with ZeRO-3 and
    // CPU offload, with a ds_config.json to run it.
    void seedZeroQuestions()
    {
        TrainingSetup setup;
        setup.microBatch = 4;
        setup.sequence = 2048;
        setup.precision = Precision::MixedBf16;
        setup.checkpointing = Checkpointing::Full;
        setup.gpusPerNode = 4;
        setup.zeroStage = 2;
        const ModelSpec llama7 = preset("llama-2-7b");
        const PlanResult seven = makePlan(llama7, setup, cardFromText("80GB"));
        QVERIFY(seven.fits.value());
        QCOMPARE(modelStates(seven.formula), 2 * llama7.totalParameters() + 18 * llama7.totalParameters() / 4);

        const ModelSpec llama70 = preset("llama-2-70b");
        setup.gpusPerNode = 8;
        setup.microBatch = 1;
        setup.zeroStage = 3;
        const PlanResult noOffload = makePlan(llama70, setup, cardFromText("80GB"));
        QVERIFY(!noOffload.fits.value()); // 18 bytes x 69B / 8 = 155 GB of model state per GPU
        QVERIFY(!noOffload.ladder.empty());
        QCOMPARE(noOffload.ladder.back().id, std::string("offload"));
        setup.offload = Offload::Optimizer;
        const PlanResult offloaded = makePlan(llama70, setup, cardFromText("80GB"));
        QVERIFY(offloaded.fits.value());
        QVERIFY(offloaded.formula.hostBytes > 1000 * GiB); // 16 bytes x 69B x 1.5 on the node

        const nlohmann::ordered_json config = deepSpeedConfig(setup);
        QCOMPARE(config["zero_optimization"]["stage"].get<int>(), 3);
        QCOMPARE(config["zero_optimization"]["offload_optimizer"]["device"].get<std::string>(), std::string("cpu"));
        QVERIFY(!config["zero_optimization"].contains("offload_param"));
        QCOMPARE(config["train_batch_size"].get<int>(), 8);
        QVERIFY(config["bf16"]["enabled"].get<bool>());
    }

    void cardsAndSetupProblems()
    {
        QCOMPARE(commonCards().size(), size_t(7));
        QCOMPARE(cardFromText("h100")->name, std::string("80GB"));
        QCOMPARE(cardFromText("141gb")->name, std::string("141GB"));
        QCOMPARE(cardFromText("24GiB")->capacityBytes, 24 * GiB);
        QCOMPARE(cardFromText("42505273344")->capacityBytes, 42505273344ULL);
        QVERIFY(!cardFromText("no-such-card"));
        TrainingSetup setup;
        setup.offload = Offload::Optimizer;
        QVERIFY(!setupProblem(setup).empty());
        setup.zeroStage = 2;
        QVERIFY(setupProblem(setup).empty());
        setup.offload = Offload::All;
        QCOMPARE(setupProblem(setup), std::string("parameter offload needs ZeRO-3"));
    }

    // A measured run: every band is compared with the formula and what-ifs scale the measured
    // numbers by what the formula says the change does.
    void calibratesFromMeasuredBands()
    {
        const ModelSpec model = preset("gpt2-large");
        TrainingSetup setup;
        setup.microBatch = 4;
        setup.sequence = 1024;
        setup.precision = Precision::MixedBf16;
        const MemoryPlan formula = planMemory(model, setup);
        DeviceAnalysis measured;
        const auto set = [&](Category category, uint64_t bytes) {
            measured.categoriesAtPeak[static_cast<size_t>(category)] = bytes;
        };
        const uint64_t activations = band(formula, Band::Activations) * 13 / 10; // 1.3x the formula
        set(Category::Parameters, band(formula, Band::Parameters));
        set(Category::Gradients, band(formula, Band::Gradients));
        set(Category::OptimizerState, band(formula, Band::OptimizerState));
        set(Category::Activations, activations);
        set(Category::Temporaries, GiB);
        measured.peakAllocatedBytes = bandTotal(formula.perGpu) - band(formula, Band::Overhead)
            + (activations - band(formula, Band::Activations));
        measured.peakReservedBytes = measured.peakAllocatedBytes + 2 * GiB;

        const PlanCalibration calibration = calibratePlan(formula, measured);
        QVERIFY(std::abs(calibration.band(Band::Activations).ratio - 1.3) < 0.01);
        QCOMPARE(calibration.band(Band::Parameters).ratio, 1.0);
        QVERIFY2(calibration.summary.find("of activations; this run measured") != std::string::npos,
            calibration.summary.c_str());
        QVERIFY(calibration.summary.find("(1.30x)") != std::string::npos);

        // Half the batch: the formula halves the activations, so the projection is 1.3 x half.
        TrainingSetup half = setup;
        half.microBatch = 2;
        const MemoryPlan whatIf = planMemory(model, half);
        const MemoryPlan projected = projectFromMeasurement(calibration, whatIf);
        const double expected = static_cast<double>(band(whatIf, Band::Activations)) * 1.3;
        QVERIFY(std::abs(static_cast<double>(band(projected, Band::Activations)) - expected) / expected < 0.01);
        QCOMPARE(band(projected, Band::Parameters), band(whatIf, Band::Parameters));
        QVERIFY(band(projected, Band::Overhead) > cudaContextBytes); // the measured 2 GiB slack, scaled

        // makePlan carries the calibration into the JSON contract.
        const PlanResult result = makePlan(model, setup, cardFromText("40GB"), &measured);
        const nlohmann::ordered_json json = planToJson(result);
        QCOMPARE(json["tool"].get<std::string>(), std::string("oomlens"));
        QVERIFY(json["plan"]["calibration"]["bands"]["activations"]["ratio"].get<double>() > 1.29);
        QCOMPARE(json["plan"]["total_per_gpu_bytes"].get<uint64_t>(), result.shown.totalPerGpu);
    }

    // every:K checkpoints blocks 0, K, 2K, ...: those keep only their input, the others keep
    // everything, and backward recomputes one checkpointed block at a time.
    void everyKthBlockCheckpointing()
    {
        const ModelSpec model = preset("gpt2-large"); // 36 blocks
        TrainingSetup setup;
        setup.microBatch = 4;
        setup.sequence = 1024;
        setup.precision = Precision::MixedBf16;
        const ActivationEstimate none = estimateActivations(model, setup);
        QVERIFY(readCheckpointing("every:4", setup));
        QCOMPARE(setup.checkpointing, Checkpointing::EveryK);
        QCOMPARE(setup.checkpointEvery, 4);
        QCOMPARE(checkpointingText(setup), std::string("every:4"));
        QCOMPARE(setup.checkpointedBlocks(36), 9);
        QCOMPARE(setup.checkpointedBlocks(37), 10); // block 36 is a multiple of 4 too
        const ActivationEstimate everyFour = estimateActivations(model, setup);
        const uint64_t input = 4ull * 1024 * 1280 * 2; // one block's input, bf16
        QCOMPARE(everyFour.savedBytes - everyFour.logitsSavedBytes,
            27 * none.perLayerBytes + 9 * input + none.perLayerBytes);
        TrainingSetup full = setup;
        QVERIFY(readCheckpointing("full", full));
        const ActivationEstimate fullEstimate = estimateActivations(model, full);
        QVERIFY(fullEstimate.savedBytes < everyFour.savedBytes);
        QVERIFY(everyFour.savedBytes < none.savedBytes);

        // "every:1" is full checkpointing; nonsense is refused and leaves the set-up alone.
        TrainingSetup one = setup;
        QVERIFY(readCheckpointing("every:1", one));
        QCOMPARE(one.checkpointing, Checkpointing::Full);
        QCOMPARE(estimateActivations(model, one).savedBytes, estimateActivations(model, full).savedBytes);
        for (const char* bad : { "every:0", "every:", "every:x", "every", "every:-2", "partial" }) {
            TrainingSetup untouched;
            QVERIFY2(!readCheckpointing(bad, untouched), bad);
            QCOMPARE(untouched.checkpointing, Checkpointing::None);
        }
        TrainingSetup invalid;
        invalid.checkpointing = Checkpointing::EveryK;
        invalid.checkpointEvery = 1;
        QVERIFY(!setupProblem(invalid).empty());
    }

    // The ladder's checkpointing rung takes the largest K that fits (the least recompute) before
    // reaching for full checkpointing, and full when no K does.
    void ladderTriesEveryKBeforeFull()
    {
        const ModelSpec model = preset("gpt2-large");
        TrainingSetup setup; // micro-batch 1 and mixed bf16: the first rung to apply is checkpointing
        setup.microBatch = 1;
        setup.sequence = 2048;
        setup.attention = Attention::Eager;
        const PlanTotal total = formulaTotal(model);
        TrainingSetup everySix = setup;
        everySix.checkpointing = Checkpointing::EveryK;
        everySix.checkpointEvery = 6;
        TrainingSetup everyEight = everySix;
        everyEight.checkpointEvery = 8;
        QVERIFY(total(everySix) < total(everyEight)); // 6 blocks checkpointed against 5
        const uint64_t capacity = total(everySix); // six checkpointed blocks fit exactly, five do not
        const std::vector<LadderRung> ladder = climbLadder(model, setup, capacity, total);
        QVERIFY(!ladder.empty());
        QCOMPARE(ladder.front().id, std::string("checkpointing"));
        const TrainingSetup& climbed = ladder.front().climbed;
        QCOMPARE(climbed.checkpointing, Checkpointing::EveryK);
        // every:7 checkpoints blocks 0, 7, ..., 35: six blocks too, and the largest such K.
        QCOMPARE(climbed.checkpointEvery, 7);
        QCOMPARE(climbed.checkpointedBlocks(36), 6);
        QVERIFY(ladder.front().change.find("one block in every 7") != std::string::npos);
        QCOMPARE(ladder.size(), size_t(1));

        TrainingSetup full = setup;
        full.checkpointing = Checkpointing::Full;
        const std::vector<LadderRung> tight = climbLadder(model, setup, total(full), total);
        QCOMPARE(tight.front().climbed.checkpointing, Checkpointing::Full);
    }

    // bitsandbytes' PagedAdamW8bit: the same 2 bytes per parameter as 8-bit AdamW, in unified
    // memory: on the GPU until it runs short, then paged to the host, so the host must back it.
    // torch's fused AdamW has the foreach step's state but not its parameter-sized intermediate.
    void pagedAndFusedOptimizers()
    {
        const ModelSpec model = preset("llama-2-7b");
        const uint64_t p = model.totalParameters();
        TrainingSetup eightBit;
        eightBit.optimizer = OptimizerKind::AdamW8bit;
        TrainingSetup paged = eightBit;
        paged.optimizer = OptimizerKind::AdamW8bitPaged;
        QCOMPARE(optimizerFromName("adamw-paged-8bit"), std::optional(OptimizerKind::AdamW8bitPaged));
        QCOMPARE(optimizerFromName("adamw-fused"), std::optional(OptimizerKind::AdamWFused));
        const MemoryPlan resident = planMemory(model, eightBit);
        const MemoryPlan spilling = planMemory(model, paged);
        QCOMPARE(band(spilling, Band::OptimizerState), band(resident, Band::OptimizerState));
        QCOMPARE(spilling.totalPerGpu, resident.totalPerGpu);
        QCOMPARE(resident.pageableBytes, uint64_t(0));
        QCOMPARE(spilling.pageableBytes, 2 * p);
        QCOMPARE(spilling.hostBytes, resident.hostBytes + 2 * p);

        // On a card between "everything" and "everything but the paged state" it runs, paging.
        GpuCard card { "tight", "test", spilling.totalPerGpu - spilling.pageableBytes / 2 };
        const PlanResult result = makePlan(model, paged, card);
        QCOMPARE(result.fits, std::optional(false));
        QCOMPARE(result.fitsWithPaging, std::optional(true));
        const nlohmann::ordered_json json = planToJson(result)["plan"];
        QCOMPARE(json["pageable_bytes"].get<uint64_t>(), 2 * p);
        QCOMPARE(json["fits_with_paging"].get<bool>(), true);
        QVERIFY(makePlan(model, eightBit, card).fitsWithPaging == std::nullopt);

        TrainingSetup foreach;
        TrainingSetup fused;
        fused.optimizer = OptimizerKind::AdamWFused;
        const MemoryPlan foreachPlan = planMemory(model, foreach);
        const MemoryPlan fusedPlan = planMemory(model, fused);
        QCOMPARE(band(fusedPlan, Band::OptimizerState), band(foreachPlan, Band::OptimizerState));
        const auto stepTemporaries = [](const MemoryPlan& plan) {
            return plan.byPhase[static_cast<size_t>(PeakPhase::OptimizerStep)][static_cast<size_t>(Band::Temporaries)];
        };
        QCOMPARE(stepTemporaries(foreachPlan), 4 * p); // sqrt(exp_avg_sq) for every fp32 parameter
        QCOMPARE(stepTemporaries(fusedPlan), uint64_t(0));
    }

    // The FSDP and accelerate equivalents of the ZeRO set-up: SHARD_GRAD_OP for stages 1-2,
    // FULL_SHARD for 3, CPU offload, the mixed-precision policy and checkpointing.
    void fsdpAndAccelerateFollowTheSetup()
    {
        const ModelSpec llama = preset("llama-2-70b");
        TrainingSetup setup;
        setup.gpusPerNode = 8;
        setup.nodes = 2;
        setup.zeroStage = 2;
        std::string snippet = fsdpSnippet(llama, setup);
        QVERIFY(snippet.find("reshard_after_forward=False") != std::string::npos);
        QVERIFY(snippet.find("ShardingStrategy.SHARD_GRAD_OP") != std::string::npos);
        QVERIFY(snippet.find("param_dtype=torch.bfloat16, reduce_dtype=torch.float32") != std::string::npos);
        QVERIFY(snippet.find("CPUOffload(offload_params=False)") != std::string::npos);
        QVERIFY(snippet.find("fully_shard(block") != std::string::npos);
        QVERIFY(snippet.find("LlamaDecoderLayer") != std::string::npos);
        QVERIFY(snippet.find("--nnodes 2 --nproc-per-node 8") != std::string::npos);
        QVERIFY(snippet.find("torch.optim.AdamW(model.parameters()") != std::string::npos);
        TrainingSetup paged = setup;
        paged.optimizer = OptimizerKind::AdamW8bitPaged;
        QVERIFY(fsdpSnippet(llama, paged).find("bnb.optim.PagedAdamW8bit") != std::string::npos);
        std::string yaml = accelerateConfig(llama, setup);
        QVERIFY(yaml.find("distributed_type: FSDP") != std::string::npos);
        QVERIFY(yaml.find("fsdp_sharding_strategy: SHARD_GRAD_OP") != std::string::npos);
        QVERIFY(yaml.find("num_processes: 16") != std::string::npos);
        QVERIFY(yaml.find("num_machines: 2") != std::string::npos);
        QVERIFY(yaml.find("mixed_precision: bf16") != std::string::npos);
        QVERIFY(yaml.find("fsdp_offload_params: false") != std::string::npos);

        setup.zeroStage = 3;
        setup.offload = Offload::All;
        setup.checkpointing = Checkpointing::Full;
        snippet = fsdpSnippet(llama, setup);
        QVERIFY(snippet.find("reshard_after_forward=True") != std::string::npos);
        QVERIFY(snippet.find("ShardingStrategy.FULL_SHARD") != std::string::npos);
        QVERIFY(snippet.find("offload_policy=CPUOffloadPolicy") != std::string::npos);
        QVERIFY(snippet.find("CPUOffload(offload_params=True)") != std::string::npos);
        QVERIFY(snippet.find("isinstance(module, LlamaDecoderLayer)") != std::string::npos);
        yaml = accelerateConfig(llama, setup);
        QVERIFY(yaml.find("fsdp_sharding_strategy: FULL_SHARD") != std::string::npos);
        QVERIFY(yaml.find("fsdp_offload_params: true") != std::string::npos);
        QVERIFY(yaml.find("fsdp_activation_checkpointing: true") != std::string::npos);

        // every:K checkpoints a slice of the block list; fp16 brings its grad scaler.
        setup.checkpointing = Checkpointing::EveryK;
        setup.checkpointEvery = 4;
        setup.precision = Precision::MixedFp16;
        snippet = fsdpSnippet(preset("gpt2-xl"), setup);
        QVERIFY(snippet.find("model.transformer.h[::4]") != std::string::npos);
        QVERIFY(snippet.find("GPT2Block") != std::string::npos);
        QVERIFY(snippet.find("torch.float16") != std::string::npos);
        QVERIFY(snippet.find("GradScaler") != std::string::npos);
        QVERIFY(accelerateConfig(llama, setup).find("mixed_precision: fp16") != std::string::npos);

        // No ZeRO: DDP on many GPUs, nothing to shard on one.
        TrainingSetup ddp;
        ddp.gpusPerNode = 4;
        QVERIFY(fsdpSnippet(llama, ddp).find("DistributedDataParallel") != std::string::npos);
        QVERIFY(accelerateConfig(llama, ddp).find("distributed_type: MULTI_GPU") != std::string::npos);
        QCOMPARE(fsdpShardingStrategy(ddp), std::string_view("NO_SHARD"));
        QVERIFY(accelerateConfig(llama, TrainingSetup {}).find("distributed_type: 'NO'") != std::string::npos);
    }

    void jsonHasTheContractKeys()
    {
        TrainingSetup setup;
        const PlanResult result = makePlan(preset("gpt2"), setup, std::nullopt);
        const nlohmann::ordered_json plan = planToJson(result)["plan"];
        for (const char* key : { "per_gpu_bytes", "total_per_gpu_bytes", "host_bytes", "peak_phase", "fits",
                 "max_micro_batch", "calibration", "ds_config" })
            QVERIFY2(plan.contains(key), key);
        for (const char* key :
            { "parameters", "gradients", "optimizer_state", "activations", "temporaries", "overhead" })
            QVERIFY2(plan["per_gpu_bytes"].contains(key), key);
        QVERIFY(plan["fits"].is_null());
        QVERIFY(plan["max_micro_batch"].is_null());
        QVERIFY(plan["calibration"].is_null());
        // Added keys (extend, never rename): the FSDP and accelerate equivalents of ds_config,
        // the paged optimizer state, and every:K checkpointing in the set-up.
        QVERIFY(plan["fsdp_snippet"].get<std::string>().find("import torch") != std::string::npos);
        QVERIFY(plan["accelerate_config"].get<std::string>().find("compute_environment: LOCAL_MACHINE")
            != std::string::npos);
        QCOMPARE(plan["pageable_bytes"].get<uint64_t>(), uint64_t(0));
        QVERIFY(plan["fits_with_paging"].is_null());
        QVERIFY(plan["setup"]["checkpoint_every"].is_null());
        setup.checkpointing = Checkpointing::EveryK;
        setup.checkpointEvery = 3;
        const nlohmann::ordered_json everyThird = planToJson(makePlan(preset("gpt2"), setup, std::nullopt))["plan"];
        QCOMPARE(everyThird["setup"]["checkpointing"].get<std::string>(), std::string("every:3"));
        QCOMPARE(everyThird["setup"]["checkpoint_every"].get<int>(), 3);
        uint64_t sum = 0;
        for (const auto& [key, value] : plan["per_gpu_bytes"].items())
            sum += value.get<uint64_t>();
        QCOMPARE(sum, plan["total_per_gpu_bytes"].get<uint64_t>());
    }
};

QTEST_GUILESS_MAIN(TestPlanner)
#include "tst_planner.moc"
