#include "common/testutil.h"
#include "core/planner/estimatorfigures.h"
#include "core/planner/hfconfig.h"
#include "core/planner/memoryplan.h"
#include "core/planner/parallelplan.h"
#include "core/planner/planresult.h"
#include "core/units.h"

#include <QTest>

#include <cmath>

using namespace oomlens;
using namespace oomlens::planner;

namespace {

ModelSpec fromConfig(const char* name)
{
    const QByteArray text
        = test::readFile(test::testDataDir() + QStringLiteral("/planner/") + QString::fromLatin1(name));
    const HfConfigResult parsed = modelFromHfConfig(text.toStdString());
    if (!parsed.model)
        qFatal("%s: %s", name, parsed.error.c_str());
    return *parsed.model;
}

uint64_t band(const BandBytes& bands, Band which)
{
    return bands[static_cast<size_t>(which)];
}

uint64_t modelStates(const BandBytes& bands)
{
    return band(bands, Band::Parameters) + band(bands, Band::Gradients) + band(bands, Band::OptimizerState);
}

TrainingSetup megatronRun(int gpus, int tp, int pp)
{
    TrainingSetup setup;
    setup.gpusPerNode = 8;
    setup.nodes = gpus / 8;
    setup.sequence = 4096;
    setup.parallel.tensor = tp;
    setup.parallel.pipeline = pp;
    return setup;
}

// Megatron-LM's compute_weight_and_optimizer_memory for a dense, untied, RMSNorm, SwiGLU,
// grouped-query model, written out as the Python does it (doubles, padded vocabulary).
double megatronPublished(double h, double a, double groups, double ffn, double layers, double vocab, double tp,
    double pp, bool distributedOptimizer, double dp)
{
    const double multiple = 128 * tp;
    const double padded = std::ceil(vocab / multiple) * multiple;
    const double layer = 2 * h * (ffn * 1.5 + 1) + 2 * h * h * (1 + groups / a);
    const double block = layer * layers + h;
    const double embedding = h * padded;
    double shard = (block / pp + embedding) / tp;
    if (pp == 1)
        shard += embedding / tp; // untied
    return shard * (distributedOptimizer ? 6 + 12 / dp : 18);
}

} // namespace

// Planning at cluster scale (issue 23): Megatron's count, the MoE count from real configs, Table
// 2's activation ratios, the pipeline schedules, the KV cache of serving.
class TestParallelPlanner : public QObject
{
    Q_OBJECT

private slots:
    // Megatron's published formula on dense TP x PP layouts of Llama-2-70B: the estimator figure
    // is the formula to the byte, and the planner's first stage holds the same model states (the
    // planner puts the final norm, h parameters, on the last stage instead of 1/PP of it on each).
    void megatronDenseLayouts_data()
    {
        QTest::addColumn<int>("gpus");
        QTest::addColumn<int>("tp");
        QTest::addColumn<int>("pp");
        QTest::addColumn<bool>("distributed");
        QTest::newRow("tp8") << 8 << 8 << 1 << false;
        QTest::newRow("tp8 x pp4") << 32 << 8 << 4 << false;
        QTest::newRow("tp8 x pp4, dist-opt, dp4") << 128 << 8 << 4 << true;
        QTest::newRow("tp4 x pp8, dist-opt, dp2") << 64 << 4 << 8 << true;
        QTest::newRow("tp2 x pp2, dp8") << 32 << 2 << 2 << false;
        QTest::newRow("pp1 tp1 dist-opt dp16") << 16 << 1 << 1 << true;
    }
    void megatronDenseLayouts()
    {
        QFETCH(int, gpus);
        QFETCH(int, tp);
        QFETCH(int, pp);
        QFETCH(bool, distributed);
        const ModelSpec model = fromConfig("llama-2-70b.config.json");
        TrainingSetup setup = megatronRun(gpus, tp, pp);
        setup.parallel.distributedOptimizer = distributed;
        const int dp = gpus / (tp * pp);
        const double published = megatronPublished(8192, 64, 8, 28672, 80, 32000, tp, pp, distributed, dp);
        const MegatronEstimate estimate = megatronTheoreticalMemory(model, setup);
        QCOMPARE(std::llround(estimate.weightAndOptimizerBytes), std::llround(published));

        const MemoryPlan plan = planMemory(model, setup);
        QCOMPARE(plan.dataParallel, dp);
        QCOMPARE(static_cast<int>(plan.stages.size()), pp);
        const double firstStage = static_cast<double>(modelStates(plan.stages.front().perGpu));
        const double finalNormShare = 8192.0 / pp / tp * (distributed ? 6 + 12.0 / dp : 18);
        QVERIFY2(std::abs(firstStage + (pp > 1 ? finalNormShare : 0) - published) < 64,
            qPrintable(QStringLiteral("%1 vs %2").arg(firstStage).arg(published)));
        // The bands: 2-byte weights, 4-byte fp32 main gradients, 12 bytes of master weights and Adam
        // (sharded over DP with the distributed optimizer).
        const uint64_t shard = plan.stages.front().parameters;
        QCOMPARE(band(plan.stages.front().perGpu, Band::Parameters), 2 * shard);
        QCOMPARE(band(plan.stages.front().perGpu, Band::Gradients), 4 * shard);
        QCOMPARE(band(plan.stages.front().perGpu, Band::OptimizerState),
            distributed ? 12 * shard / static_cast<uint64_t>(dp) : 12 * shard);
        QVERIFY(!plan.estimators.empty());
        QCOMPARE(plan.estimators.front().id, std::string("megatron_weights_and_optimizer"));
    }

    // The MoE count from the published configs: Mixtral-8x7B's 46.7B (12.9B active), DeepSeek-V3's
    // 671B (37B active; the multi-token-prediction layer is not in it), Qwen1.5-MoE-A2.7B's 14.3B
    // (2.7B active).
    void moeCountsFromConfigs()
    {
        const ModelSpec mixtral = fromConfig("mixtral-8x7b.config.json");
        QCOMPARE(mixtral.experts, 8);
        QCOMPARE(mixtral.topK(), 2);
        QCOMPARE(mixtral.totalParameters(), uint64_t { 46702792704 });
        QCOMPARE(mixtral.activeParameters(), uint64_t { 12879925248 });
        QCOMPARE(mixtral.totalParameters(), modelPreset("mixtral-8x7b")->totalParameters());

        const ModelSpec deepseek = fromConfig("deepseek-v3.config.json");
        QCOMPARE(deepseek.experts, 256);
        QCOMPARE(deepseek.sharedExperts, 1);
        QCOMPARE(deepseek.denseLayers, 3);
        QCOMPARE(deepseek.moeLayers(), 58);
        QVERIFY(deepseek.latentAttention());
        QCOMPARE(deepseek.totalParameters(), uint64_t { 671026404352 });
        QCOMPARE(deepseek.activeParameters(), uint64_t { 37552282624 });

        const ModelSpec qwen = fromConfig("qwen1.5-moe-a2.7b.config.json");
        QCOMPARE(qwen.experts, 60);
        QCOMPARE(qwen.sharedExperts, 1);
        QCOMPARE(qwen.sharedExpertFfn, 5632);
        QVERIFY(std::abs(static_cast<double>(qwen.totalParameters()) / 14.3e9 - 1) < 0.002);
        QVERIFY(std::abs(static_cast<double>(qwen.activeParameters()) / 2.7e9 - 1) < 0.01);
    }

    // Experts split over EP (and TP), the dense part over TP alone; the experts' optimizer state
    // shards over what is left of data parallel after EP.
    void expertParallelSplit()
    {
        const ModelSpec mixtral = fromConfig("mixtral-8x7b.config.json");
        TrainingSetup setup = megatronRun(64, 1, 1);
        setup.parallel.expert = 8;
        setup.parallel.distributedOptimizer = true;
        const MemoryPlan plan = planMemory(mixtral, setup);
        QCOMPARE(plan.dataParallel, 64);
        QCOMPARE(plan.expertDataParallel, 8);
        const uint64_t experts = mixtral.totalExpertParameters();
        const uint64_t dense = mixtral.totalParameters() - experts;
        QCOMPARE(plan.parametersPerGpu, dense + experts / 8);
        QCOMPARE(band(plan.perGpu, Band::OptimizerState), 12 * dense / 64 + 12 * (experts / 8) / 8);
        // Megatron's own count does not divide the experts by EP: the figure says so beside ours.
        const EstimatorFigure& megatron = plan.estimators.front();
        QVERIFY(megatron.bytes > 3 * megatron.plannerBytes);
        QVERIFY(QString::fromStdString(megatron.reason).contains(QStringLiteral("EP")));
    }

    // Korthikanti et al. Table 2 on a GPT block (LayerNorm, dropout, 4h MLP, 16-bit, eager):
    // 34·sbh + 5·as²b without parallelism; TP alone keeps sbh(10 + 24/t) + 5as²b/t; TP with SP
    // divides all of it by t; selective recompute drops the 5as²b/t. The norms' fp32 statistics
    // (16 bytes a token, split with SP) are the planner's own addition.
    void table2Ratios()
    {
        ModelSpec gpt;
        gpt.layers = 8;
        gpt.hidden = 1024;
        gpt.heads = 16;
        gpt.vocab = 51200;
        gpt.layerNormBiases = true;
        gpt.dropout = true;
        TrainingSetup setup;
        setup.precision = Precision::MixedFp16;
        setup.attention = Attention::Eager;
        setup.microBatch = 2;
        setup.sequence = 2048;
        const uint64_t s = 2048, b = 2, h = 1024, a = 16, t = 8;
        const uint64_t sbh = s * b * h;
        const uint64_t statistics = s * b * 16;
        QCOMPARE(estimateActivations(gpt, setup).perLayerBytes, 34 * sbh + 5 * a * s * s * b + statistics);

        setup.parallel.tensor = 8;
        setup.gpusPerNode = 8;
        QCOMPARE(estimateActivations(gpt, setup).perLayerBytes,
            10 * sbh + 24 * sbh / t + 5 * a * s * s * b / t + statistics);
        setup.parallel.sequenceParallel = true;
        QCOMPARE(estimateActivations(gpt, setup).perLayerBytes, 34 * sbh / t + 5 * a * s * s * b / t + statistics / t);
        setup.checkpointing = Checkpointing::Selective;
        QCOMPARE(estimateActivations(gpt, setup).perLayerBytes, 34 * sbh / t + statistics / t);

        // Context parallelism splits the sequence: half the tokens per rank, half of everything
        // that grows with them (FlashAttention keeps no scores).
        TrainingSetup flash;
        flash.microBatch = 2;
        flash.sequence = 2048;
        const uint64_t whole = estimateActivations(gpt, flash).perLayerBytes;
        flash.parallel.context = 2;
        flash.gpusPerNode = 2;
        QCOMPARE(estimateActivations(gpt, flash).perLayerBytes * 2, whole);
    }

    // 1F1B: stage k holds min(PP - k, M) microbatches; interleaving costs the first stage
    // 1 + (PP - 1)/(PP·VPP) over that.
    void pipelineSchedules()
    {
        const ModelSpec model = fromConfig("llama-2-70b.config.json");
        TrainingSetup setup = megatronRun(32, 8, 4);
        setup.parallel.sequenceParallel = true;
        const MemoryPlan plan = planMemory(model, setup);
        ModelSpec padded = model; // the logits over Megatron's padded vocabulary
        padded.vocab = megatronPaddedVocab(model.vocab, 8);
        QCOMPARE(padded.vocab, 32768);
        const ActivationEstimate perLayer = estimateActivations(padded, setup);
        for (const StageMemory& stage : plan.stages) {
            QCOMPARE(stage.layers, 20);
            QCOMPARE(stage.inFlight, 4 - stage.stage);
        }
        const uint64_t firstStage = band(plan.stages.front().perGpu, Band::Activations);
        QCOMPARE(firstStage, 4 * 20 * perLayer.perLayerBytes);
        QCOMPARE(band(plan.stages.back().perGpu, Band::Activations),
            20 * perLayer.perLayerBytes + perLayer.logitsSavedBytes);

        TrainingSetup few = setup;
        few.parallel.microbatches = 2;
        QCOMPARE(
            band(planMemory(model, few).stages.front().perGpu, Band::Activations), 2 * 20 * perLayer.perLayerBytes);

        TrainingSetup interleaved = setup;
        interleaved.parallel.virtualStages = 5; // chunks of 4 layers
        interleaved.parallel.microbatches = 16;
        const MemoryPlan chunked = planMemory(model, interleaved);
        const double penalty = 1.0 + 3.0 / 20;
        QCOMPARE(interleaved.parallel.interleavingPenalty(), penalty);
        QCOMPARE(static_cast<double>(band(chunked.stages.front().perGpu, Band::Activations)),
            static_cast<double>(firstStage) * penalty);
        QCOMPARE(chunked.busiestStage, 0);
    }

    // Serving: the weights split by TP at their format, the KV cache of the sequences, vLLM's budget.
    void servingLlama70b()
    {
        const ModelSpec model = fromConfig("llama-2-70b.config.json");
        TrainingSetup setup;
        setup.inference = true;
        setup.gpusPerNode = 4;
        setup.parallel.tensor = 4;
        setup.microBatch = 32;
        setup.sequence = 4096;
        const PlanResult result = makePlan(model, setup, cardFromText("80GB"));
        const MemoryPlan& plan = result.formula;
        QCOMPARE(plan.servingMemory.kvBytesPerToken, 80 * KiB); // 320 KiB over 4 ranks
        QCOMPARE(band(plan.perGpu, Band::KvCache), 32ull * 4096 * 80 * KiB);
        QCOMPARE(band(plan.perGpu, Band::Parameters), 2 * ((model.totalParameters() + 3) / 4));
        QVERIFY(result.serving);
        const ServingFit& fit = *result.serving;
        QCOMPARE(fit.kvTokens, fit.kvBudgetBytes / (80 * KiB));
        QCOMPARE(static_cast<uint64_t>(result.maxMicroBatch), fit.kvTokens / 4096);
        QVERIFY(fit.fits);
        // fp8 halves the cache; int4 weights shrink the blocks to about a quarter.
        setup.kvDtype = KvDtype::Fp8;
        QCOMPARE(planMemory(model, setup).servingMemory.kvBytesPerToken, 40 * KiB);
        setup.weights = WeightFormat::Int4;
        const double ratio = static_cast<double>(band(planMemory(model, setup).perGpu, Band::Parameters))
            / static_cast<double>(band(plan.perGpu, Band::Parameters));
        QVERIFY(ratio > 0.26 && ratio < 0.30);
    }

    // DeepSeek-V3's latent cache: 61 layers x (512 + 64) x 2 bytes a token, the same on every TP
    // rank; fp8 weights put its 671B over 8 GPUs at about 78 GiB each.
    void servingLatentAttention()
    {
        const ModelSpec deepseek = fromConfig("deepseek-v3.config.json");
        TrainingSetup setup;
        setup.inference = true;
        setup.gpusPerNode = 8;
        setup.parallel.tensor = 8;
        setup.weights = WeightFormat::Fp8;
        const MemoryPlan plan = planMemory(deepseek, setup);
        QCOMPARE(plan.servingMemory.kvBytesPerToken, uint64_t { 61 * 576 * 2 });
        const double weightsGiB = static_cast<double>(plan.servingMemory.weightBytes) / static_cast<double>(GiB);
        QVERIFY2(weightsGiB > 77 && weightsGiB < 80, qPrintable(QString::number(weightsGiB)));
    }

    // DeepSpeed's documented ZeRO-2 estimate (4P + 16P/N) beside the planner's 2P + 18P/N.
    void deepSpeedEstimatorNote()
    {
        ModelSpec model;
        model.parameters = 7000000000;
        TrainingSetup setup;
        setup.gpusPerNode = 8;
        setup.zeroStage = 2;
        const MemoryPlan plan = planMemory(model, setup);
        QCOMPARE(plan.estimators.size(), size_t { 1 });
        const uint64_t p = model.parameters;
        QCOMPARE(plan.estimators.front().bytes, 4 * p + 16 * p / 8);
        QCOMPARE(plan.estimators.front().plannerBytes, 2 * p + 18 * p / 8);
        QVERIFY(QString::fromStdString(plan.estimators.front().reason).contains(QStringLiteral("partition")));
    }

    // The ladder climbs to tensor parallelism when sharding over data parallel is not enough.
    void ladderReachesTensorParallel()
    {
        const ModelSpec model = fromConfig("llama-2-70b.config.json");
        TrainingSetup setup = megatronRun(32, 1, 1);
        setup.parallel.distributedOptimizer = true;
        setup.checkpointing = Checkpointing::Full;
        setup.optimizer = OptimizerKind::AdamW8bit;
        const PlanResult result = makePlan(model, setup, cardFromText("80GB"));
        QVERIFY(!*result.fits);
        QVERIFY(!result.ladder.empty());
        QCOMPARE(result.ladder.back().id, std::string("tensor_parallel"));
        QVERIFY(result.ladder.back().climbedTotal <= 80 * GiB);
        QVERIFY(result.ladder.back().climbed.parallel.tensor > 1);
    }

    void badLayouts()
    {
        TrainingSetup setup;
        setup.gpusPerNode = 8;
        setup.parallel.tensor = 3;
        QVERIFY(!setupProblem(setup).empty());
        setup.parallel.tensor = 2;
        setup.parallel.expert = 3;
        QVERIFY(!setupProblem(setup).empty());
        setup.parallel.expert = 1;
        setup.parallel.virtualStages = 2;
        QVERIFY(!setupProblem(setup).empty()); // needs PP
        setup.parallel.virtualStages = 1;
        setup.parallel.distributedOptimizer = true;
        setup.zeroStage = 1;
        QVERIFY(!setupProblem(setup).empty());
        setup.zeroStage = 0;
        QVERIFY(setupProblem(setup).empty());
    }
};

QTEST_GUILESS_MAIN(TestParallelPlanner)
#include "tst_parallelplanner.moc"
