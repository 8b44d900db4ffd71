#include "common/clirun.h"
#include "common/testutil.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

// Runs the real `oomlens plan` as a user or a script would: the flags and JSON of product.md
// §5 (Wave-2 commands), the readable table, the exit statuses, and the seeds' questions.
class TestPlanCli : public QObject
{
    Q_OBJECT

    using Run = oomlens::test::CliRun;

    static Run oomlens(const QStringList& arguments)
    {
        return oomlens::test::runOomlens(QStringList { QStringLiteral("plan") } + arguments);
    }

    static QJsonObject planJson(const QStringList& arguments)
    {
        const Run run = oomlens(arguments + QStringList { QStringLiteral("--json") });
        if (run.exitCode != 0)
            qFatal("plan failed (%d): %s", run.exitCode, run.err.constData());
        const QJsonObject document = oomlens::test::parseJsonObject(run.out);
        if (document.value(QStringLiteral("tool")).toString() != QLatin1String("oomlens"))
            qFatal("no tool key");
        return document.value(QStringLiteral("plan")).toObject();
    }

    static QString fixture(const char* name)
    {
        return oomlens::test::testDataDir() + QStringLiteral("/planner/") + QString::fromLatin1(name);
    }

private Q_SLOTS:
    void initTestCase() { OOMLENS_REQUIRE_BINARY(); }

    void jsonContract()
    {
        const QJsonObject plan = planJson({ QStringLiteral("--params"), QStringLiteral("7e9") });
        for (const char* key : { "per_gpu_bytes", "total_per_gpu_bytes", "host_bytes", "peak_phase", "fits",
                 "max_micro_batch", "calibration", "ds_config" })
            QVERIFY2(plan.contains(QLatin1String(key)), key);
        const QJsonObject bands = plan.value(QStringLiteral("per_gpu_bytes")).toObject();
        double sum = 0;
        for (const char* key :
            { "parameters", "gradients", "optimizer_state", "activations", "temporaries", "overhead" }) {
            QVERIFY2(bands.contains(QLatin1String(key)), key);
            sum += bands.value(QLatin1String(key)).toDouble();
        }
        QCOMPARE(sum, plan.value(QStringLiteral("total_per_gpu_bytes")).toDouble());
        // No card: fits and max_micro_batch are null; no snapshot: no calibration.
        QVERIFY(plan.value(QStringLiteral("fits")).isNull());
        QVERIFY(plan.value(QStringLiteral("max_micro_batch")).isNull());
        QVERIFY(plan.value(QStringLiteral("calibration")).isNull());
        // 7B mixed AdamW without ZeRO: 18 bytes per parameter of model state; no dimensions, no activations.
        QCOMPARE(bands.value(QStringLiteral("parameters")).toDouble()
                + bands.value(QStringLiteral("gradients")).toDouble()
                + bands.value(QStringLiteral("optimizer_state")).toDouble(),
            18 * 7e9);
        QCOMPARE(bands.value(QStringLiteral("activations")).toDouble(), 0.0);
        QCOMPARE(plan.value(QStringLiteral("peak_phase")).toString(), QStringLiteral("optimizer_step"));
    }

    // Seed 000: what fills the 40 GB A100 for GPT-2 Large at batch 8 x 1024, and which rung fits.
    void seedGpt2LargeQuestion()
    {
        const QStringList arguments { QStringLiteral("--model"), fixture("gpt2-large.config.json"),
            QStringLiteral("--batch"), QStringLiteral("8"), QStringLiteral("--seq"), QStringLiteral("1024"),
            QStringLiteral("--precision"), QStringLiteral("mixed-fp16"), QStringLiteral("--attention"),
            QStringLiteral("eager"), QStringLiteral("--card"), QStringLiteral("a100-40gb") };
        const QJsonObject plan = planJson(arguments);
        QCOMPARE(plan.value(QStringLiteral("fits")).toBool(true), false);
        QCOMPARE(plan.value(QStringLiteral("max_micro_batch")).toInt(), 4);
        QCOMPARE(plan.value(QStringLiteral("peak_phase")).toString(), QStringLiteral("backward"));
        const QJsonObject bands = plan.value(QStringLiteral("per_gpu_bytes")).toObject();
        QVERIFY(bands.value(QStringLiteral("activations")).toDouble() > 40e9);
        const QJsonArray ladder = plan.value(QStringLiteral("ladder")).toArray();
        QVERIFY(!ladder.isEmpty());
        const QJsonObject last = ladder.last().toObject();
        QCOMPARE(last.value(QStringLiteral("id")).toString(), QStringLiteral("micro_batch"));
        QVERIFY(last.value(QStringLiteral("climbed_fits")).toBool());

        const Run text = oomlens(arguments);
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("activations"), text.out.constData());
        QVERIFY(text.out.contains("short by"));
        QVERIFY(text.out.contains("It fits from rung 'micro_batch' on."));
        QVERIFY(text.out.contains("Largest micro-batch that fits: 4"));
    }

    // Seed 001: 70B on 8 x 80 GB with ZeRO-3: without offload the model state alone is too big,
    // with the optimizer on the CPU it fits, and the ds_config.json says so.
    void seedZeroQuestion()
    {
        const QStringList common { QStringLiteral("--model"), fixture("llama-2-70b.config.json"),
            QStringLiteral("--batch"), QStringLiteral("1"), QStringLiteral("--seq"), QStringLiteral("4096"),
            QStringLiteral("--checkpointing"), QStringLiteral("full"), QStringLiteral("--gpus"), QStringLiteral("8"),
            QStringLiteral("--zero"), QStringLiteral("3"), QStringLiteral("--card"), QStringLiteral("80GB") };
        const QJsonObject sharded = planJson(common);
        QCOMPARE(sharded.value(QStringLiteral("fits")).toBool(true), false);
        const QJsonObject offloaded
            = planJson(common + QStringList { QStringLiteral("--offload"), QStringLiteral("optimizer") });
        QCOMPARE(offloaded.value(QStringLiteral("fits")).toBool(false), true);
        QVERIFY(offloaded.value(QStringLiteral("host_bytes")).toDouble() > 1e12);
        const QJsonObject config = offloaded.value(QStringLiteral("ds_config")).toObject();
        const QJsonObject zero = config.value(QStringLiteral("zero_optimization")).toObject();
        QCOMPARE(zero.value(QStringLiteral("stage")).toInt(), 3);
        QCOMPARE(zero.value(QStringLiteral("offload_optimizer")).toObject().value(QStringLiteral("device")).toString(),
            QStringLiteral("cpu"));
        QCOMPARE(config.value(QStringLiteral("train_micro_batch_size_per_gpu")).toInt(), 1);
        QCOMPARE(config.value(QStringLiteral("train_batch_size")).toInt(), 8);

        // 7B on four GPUs with ZeRO-2 (the product.md example: 2·P + 18·P/N of model state... per GPU).
        const QJsonObject seven = planJson(
            { QStringLiteral("--model"), QStringLiteral("llama-2-7b"), QStringLiteral("--gpus"), QStringLiteral("4"),
                QStringLiteral("--zero"), QStringLiteral("2"), QStringLiteral("--card"), QStringLiteral("80GB") });
        QVERIFY(seven.value(QStringLiteral("fits")).toBool());
        QVERIFY(seven.value(QStringLiteral("max_micro_batch")).toInt() >= 1);
    }

    // The last set-up knobs through the real flags: every:K checkpointing, paged 8-bit
    // AdamW, and the FSDP / accelerate equivalents beside ds_config (JSON and text).
    void everyKPagedAndFsdp()
    {
        const QStringList gpt2 { QStringLiteral("--model"), QStringLiteral("gpt2-large"), QStringLiteral("--batch"),
            QStringLiteral("8"), QStringLiteral("--seq"), QStringLiteral("1024") };
        const double none = planJson(gpt2).value(QStringLiteral("total_per_gpu_bytes")).toDouble();
        const double full = planJson(gpt2 + QStringList { QStringLiteral("--checkpointing"), QStringLiteral("full") })
                                .value(QStringLiteral("total_per_gpu_bytes"))
                                .toDouble();
        const QJsonObject every
            = planJson(gpt2 + QStringList { QStringLiteral("--checkpointing"), QStringLiteral("every:4") });
        const double everyTotal = every.value(QStringLiteral("total_per_gpu_bytes")).toDouble();
        QVERIFY(full < everyTotal && everyTotal < none);
        const QJsonObject setup = every.value(QStringLiteral("setup")).toObject();
        QCOMPARE(setup.value(QStringLiteral("checkpointing")).toString(), QStringLiteral("every:4"));
        QCOMPARE(setup.value(QStringLiteral("checkpoint_every")).toInt(), 4);
        QCOMPARE(
            oomlens(gpt2 + QStringList { QStringLiteral("--checkpointing"), QStringLiteral("every:x") }).exitCode, 2);

        const QJsonObject paged
            = planJson(gpt2 + QStringList { QStringLiteral("--optimizer"), QStringLiteral("adamw-paged-8bit") });
        QVERIFY(paged.value(QStringLiteral("pageable_bytes")).toDouble() > 1e9); // 2 bytes x 774M
        QVERIFY(paged.value(QStringLiteral("fits_with_paging")).isNull()); // no card
        QCOMPARE(planJson(gpt2 + QStringList { QStringLiteral("--optimizer"), QStringLiteral("adamw-8bit") })
                     .value(QStringLiteral("pageable_bytes"))
                     .toDouble(),
            0.0);

        const QStringList sharded = gpt2
            + QStringList { QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--zero"),
                  QStringLiteral("3"), QStringLiteral("--precision"), QStringLiteral("mixed-bf16") };
        const QJsonObject fsdp = planJson(sharded);
        QVERIFY(fsdp.value(QStringLiteral("fsdp_snippet")).toString().contains(QStringLiteral("FULL_SHARD")));
        QVERIFY(fsdp.value(QStringLiteral("accelerate_config"))
                    .toString()
                    .contains(QStringLiteral("fsdp_sharding_strategy: FULL_SHARD")));
        QVERIFY(fsdp.value(QStringLiteral("ds_config")).isObject()); // still there, unchanged
        const Run text = oomlens(sharded);
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains("FSDP equivalent"));
        QVERIFY(text.out.contains("fully_shard(model, reshard_after_forward=True"));
        QVERIFY(text.out.contains("accelerate config:"));
    }

    void loraTargetsFlag()
    {
        const QJsonObject plan
            = planJson({ QStringLiteral("--model"), QStringLiteral("llama-2-7b"), QStringLiteral("--lora-rank"),
                QStringLiteral("8"), QStringLiteral("--lora-targets"), QStringLiteral("qv") });
        QCOMPARE(plan.value(QStringLiteral("setup")).toObject().value(QStringLiteral("lora_targets")).toString(),
            QStringLiteral("qv"));
        QCOMPARE(oomlens({ QStringLiteral("--model"), QStringLiteral("llama-2-7b"), QStringLiteral("--lora-targets"),
                             QStringLiteral("attention") })
                     .exitCode,
            2); // targets without a rank
        QCOMPARE(oomlens({ QStringLiteral("--model"), QStringLiteral("llama-2-7b"), QStringLiteral("--lora-rank"),
                             QStringLiteral("8"), QStringLiteral("--lora-targets"), QStringLiteral("mlp") })
                     .exitCode,
            2);
    }

    void usageErrors()
    {
        QCOMPARE(oomlens({}).exitCode, 2); // no model
        QCOMPARE(oomlens({ QStringLiteral("--params"), QStringLiteral("1e9"), QStringLiteral("--precision"),
                             QStringLiteral("fp8") })
                     .exitCode,
            2);
        const Run offload = oomlens({ QStringLiteral("--params"), QStringLiteral("1e9"), QStringLiteral("--offload"),
            QStringLiteral("all"), QStringLiteral("--zero"), QStringLiteral("2") });
        QCOMPARE(offload.exitCode, 2);
        QVERIFY(offload.err.contains("parameter offload needs ZeRO-3"));
        QCOMPARE(oomlens({ QStringLiteral("--params"), QStringLiteral("1e9"), QStringLiteral("--card"),
                             QStringLiteral("no-such-card") })
                     .exitCode,
            2);
        const Run missing = oomlens({ QStringLiteral("--model"), QStringLiteral("/no/such/config.json") });
        QCOMPARE(missing.exitCode, 1);
        const Run help = oomlens({ QStringLiteral("--help") });
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains("--lora-rank"));
    }

    // A measured run: the calibration block compares each band with the formula.
    void calibratesWithASnapshot()
    {
        const QString snapshot = oomlens::test::testDataDir() + QStringLiteral("/scenarios/first_backward.pickle");
        const QJsonObject plan = planJson({ QStringLiteral("--params"), QStringLiteral("1e8"),
            QStringLiteral("--layers"), QStringLiteral("4"), QStringLiteral("--hidden"), QStringLiteral("512"),
            QStringLiteral("--heads"), QStringLiteral("8"), QStringLiteral("--vocab"), QStringLiteral("32000"),
            QStringLiteral("--snapshot"), snapshot, QStringLiteral("--card"), QStringLiteral("2GiB") });
        const QJsonObject calibration = plan.value(QStringLiteral("calibration")).toObject();
        QVERIFY(!calibration.isEmpty());
        QVERIFY(calibration.value(QStringLiteral("measured_peak_allocated_bytes")).toDouble() > 0);
        QVERIFY(calibration.value(QStringLiteral("summary")).toString().contains(QStringLiteral("this run measured")));
        const QJsonObject activations
            = calibration.value(QStringLiteral("bands")).toObject().value(QStringLiteral("activations")).toObject();
        QVERIFY(activations.value(QStringLiteral("measured_bytes")).toDouble() > 0);
        QVERIFY(activations.value(QStringLiteral("ratio")).toDouble() > 0);
        QCOMPARE(oomlens({ QStringLiteral("--params"), QStringLiteral("1e8"), QStringLiteral("--snapshot"),
                             QStringLiteral("/no/such.pickle") })
                     .exitCode,
            1);
    }

    // `--report` writes the plan as a report of its own: the section, the bars with the card's
    // line, the ladder and the cards, and no "nothing to diagnose" noise from an empty case.
    void writesAPlanReport()
    {
        QTemporaryDir directory;
        const QString path = directory.filePath(QStringLiteral("plan.html"));
        const Run run = oomlens({ QStringLiteral("--model"), QStringLiteral("gpt2-large"), QStringLiteral("--batch"),
            QStringLiteral("8"), QStringLiteral("--seq"), QStringLiteral("1024"), QStringLiteral("--precision"),
            QStringLiteral("mixed-fp16"), QStringLiteral("--attention"), QStringLiteral("eager"),
            QStringLiteral("--card"), QStringLiteral("40GB"), QStringLiteral("--report"), path });
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.contains("short by"), run.out.constData()); // the table is still printed
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray html = file.readAll();
        QVERIFY(html.contains("<title>Memory plan: "));
        QVERIFY(html.contains("<section id=\"plan\">"));
        QVERIFY(html.contains("class=\"chart plan\""));
        QVERIFY(html.contains("capacity-line"));
        QVERIFY(html.contains("verdict short"));
        QVERIFY(html.contains("The ladder, cheapest first"));
        QVERIFY(html.contains("micro_batch"));
        QVERIFY(html.contains("Common cards"));
        QVERIFY(!html.contains("id=\"diagnosis\""));
        QVERIFY(!html.contains("Nothing to diagnose"));
        QVERIFY(!html.contains("<script"));
    }

    // A sharded plan's report carries ds_config.json and after it the FSDP snippet and the
    // accelerate config, escaped like every other text.
    void shardedPlanReportHasTheFsdpBlock()
    {
        const Run run = oomlens({ QStringLiteral("--model"), QStringLiteral("llama-2-70b"), QStringLiteral("--gpus"),
            QStringLiteral("8"), QStringLiteral("--zero"), QStringLiteral("3"), QStringLiteral("--offload"),
            QStringLiteral("optimizer"), QStringLiteral("--checkpointing"), QStringLiteral("every:4"),
            QStringLiteral("--card"), QStringLiteral("80GB"), QStringLiteral("--report"), QStringLiteral("-") });
        QCOMPARE(run.exitCode, 0);
        const QByteArray& html = run.out;
        const qsizetype dsConfig = html.indexOf("<h3>ds_config.json for this set-up</h3>");
        const qsizetype fsdp = html.indexOf("<h3>FSDP equivalent</h3>");
        const qsizetype accelerate = html.indexOf("<h3>accelerate config</h3>");
        QVERIFY(dsConfig > 0 && fsdp > dsConfig && accelerate > fsdp);
        QVERIFY(html.contains("# ZeRO-3 -&gt; FULL_SHARD")); // escaped, not raw
        QVERIFY(html.contains("model.model.layers[::4]"));
        QVERIFY(html.contains("fsdp_offload_params: true"));
        QVERIFY(!html.contains("<script"));
    }

    // With --snapshot the report holds the measured run beside the calibrated plan.
    void calibratedPlanReportHoldsTheRun()
    {
        const QString snapshot = oomlens::test::testDataDir() + QStringLiteral("/scenarios/first_backward.pickle");
        const Run run = oomlens(
            { QStringLiteral("--params"), QStringLiteral("1e8"), QStringLiteral("--layers"), QStringLiteral("4"),
                QStringLiteral("--hidden"), QStringLiteral("512"), QStringLiteral("--heads"), QStringLiteral("8"),
                QStringLiteral("--vocab"), QStringLiteral("32000"), QStringLiteral("--snapshot"), snapshot,
                QStringLiteral("--card"), QStringLiteral("2GiB"), QStringLiteral("--report"), QStringLiteral("-") });
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.startsWith("<!DOCTYPE html>")); // '-' makes the report the output
        QVERIFY(run.out.contains("Memory plan, projected from this run"));
        QVERIFY(run.out.contains("measured ÷ formula"));
        QVERIFY(run.out.contains("id=\"diagnosis\"")); // the run failed: its diagnosis is there too
        QVERIFY(run.out.contains("id=\"snapshots\""));
    }

    // Issue 23: a 70B TP8 x PP4 plan as JSON: the layout echoed under setup, a plan per stage,
    // the bands per phase, Megatron's figure beside ours.
    void clusterScaleJson()
    {
        const QJsonObject plan = planJson({ QStringLiteral("--model"), fixture("llama-2-70b.config.json"),
            QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--nodes"), QStringLiteral("4"),
            QStringLiteral("--tp"), QStringLiteral("8"), QStringLiteral("--pp"), QStringLiteral("4"),
            QStringLiteral("--sequence-parallel"), QStringLiteral("--checkpointing"), QStringLiteral("selective"),
            QStringLiteral("--seq"), QStringLiteral("4096"), QStringLiteral("--card"), QStringLiteral("80GB") });
        const QJsonObject setup = plan.value(QStringLiteral("setup")).toObject();
        QCOMPARE(setup.value(QStringLiteral("tp")).toInt(), 8);
        QCOMPARE(setup.value(QStringLiteral("pp")).toInt(), 4);
        QCOMPARE(setup.value(QStringLiteral("sequence_parallel")).toBool(), true);
        QCOMPARE(setup.value(QStringLiteral("data_parallel")).toInt(), 1);
        QCOMPARE(setup.value(QStringLiteral("checkpointing")).toString(), QStringLiteral("selective"));
        const QJsonObject parallel = plan.value(QStringLiteral("parallel")).toObject();
        const QJsonArray stages = parallel.value(QStringLiteral("stages")).toArray();
        QCOMPARE(stages.size(), 4);
        const int busiest = parallel.value(QStringLiteral("busiest_stage")).toInt();
        QCOMPARE(stages.at(busiest).toObject().value(QStringLiteral("total_per_gpu_bytes")).toDouble(),
            plan.value(QStringLiteral("total_per_gpu_bytes")).toDouble());
        QCOMPARE(stages.at(0).toObject().value(QStringLiteral("in_flight")).toInt(), 4);
        QCOMPARE(stages.at(3).toObject().value(QStringLiteral("in_flight")).toInt(), 1);
        // phase_bands: what each phase holds, the peak's equal to per_gpu_bytes.
        const QJsonObject phases = plan.value(QStringLiteral("phase_bands")).toObject();
        for (const char* phase : { "forward", "backward", "optimizer_step" })
            QVERIFY2(phases.value(QLatin1String(phase)).toObject().contains(QStringLiteral("activations")), phase);
        QCOMPARE(phases.value(plan.value(QStringLiteral("peak_phase")).toString()).toObject(),
            plan.value(QStringLiteral("per_gpu_bytes")).toObject());
        QCOMPARE(
            phases.value(QStringLiteral("optimizer_step")).toObject().value(QStringLiteral("activations")).toDouble(),
            0.0);
        const QJsonArray estimators = plan.value(QStringLiteral("estimators")).toArray();
        QVERIFY(!estimators.isEmpty());
        const QJsonObject megatron = estimators.at(0).toObject();
        QCOMPARE(megatron.value(QStringLiteral("id")).toString(), QStringLiteral("megatron_weights_and_optimizer"));
        // The same count, but for the final norm's 1/PP share Megatron puts on the first stage.
        QVERIFY(std::abs(megatron.value(QStringLiteral("bytes")).toDouble()
                    - megatron.value(QStringLiteral("planner_bytes")).toDouble())
            < 8192 * 18);
        QVERIFY(plan.value(QStringLiteral("inference")).isNull());
    }

    void mixtralExpertParallel()
    {
        const QJsonObject plan = planJson({ QStringLiteral("--model"), fixture("mixtral-8x7b.config.json"),
            QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--ep"), QStringLiteral("8"),
            QStringLiteral("--distributed-optimizer"), QStringLiteral("--checkpointing"), QStringLiteral("full") });
        const QJsonObject model = plan.value(QStringLiteral("model")).toObject();
        QCOMPARE(model.value(QStringLiteral("experts")).toInt(), 8);
        QCOMPARE(model.value(QStringLiteral("experts_per_token")).toInt(), 2);
        QCOMPARE(model.value(QStringLiteral("parameters")).toDouble(), 46702792704.0);
        const QJsonObject parallel = plan.value(QStringLiteral("parallel")).toObject();
        QCOMPARE(parallel.value(QStringLiteral("data_parallel")).toInt(), 8);
        QCOMPARE(parallel.value(QStringLiteral("expert_data_parallel")).toInt(), 1);
        QCOMPARE(plan.value(QStringLiteral("setup")).toObject().value(QStringLiteral("ep")).toInt(), 8);
    }

    // Serving Llama-2-70B over 4 x 80 GB: the KV cache per token, what vLLM leaves for it.
    void servingPlan()
    {
        const QStringList arguments { QStringLiteral("--model"), fixture("llama-2-70b.config.json"),
            QStringLiteral("--inference"), QStringLiteral("--gpus"), QStringLiteral("4"), QStringLiteral("--tp"),
            QStringLiteral("4"), QStringLiteral("--batch"), QStringLiteral("32"), QStringLiteral("--seq"),
            QStringLiteral("4096"), QStringLiteral("--card"), QStringLiteral("80GB") };
        const QJsonObject plan = planJson(arguments);
        QCOMPARE(plan.value(QStringLiteral("setup")).toObject().value(QStringLiteral("kv_dtype")).toString(),
            QStringLiteral("bf16"));
        const QJsonObject inference = plan.value(QStringLiteral("inference")).toObject();
        QCOMPARE(inference.value(QStringLiteral("kv_bytes_per_token")).toDouble(), 81920.0);
        const QJsonObject vllm = inference.value(QStringLiteral("vllm")).toObject();
        QVERIFY(vllm.value(QStringLiteral("kv_tokens")).toDouble() > 32 * 4096);
        QCOMPARE(vllm.value(QStringLiteral("fits")).toBool(), true);
        QCOMPARE(plan.value(QStringLiteral("fits")).toBool(), true);
        QCOMPARE(plan.value(QStringLiteral("per_gpu_bytes")).toObject().value(QStringLiteral("kv_cache")).toDouble(),
            32.0 * 4096 * 81920);
        const Run text = oomlens(arguments);
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("GPU KV cache size"), text.out.constData());
        QVERIFY2(text.out.contains("vllm serve llama --tensor-parallel-size 4 --gpu-memory-utilization 0.90 "
                                   "--max-model-len 4096 --max-num-seqs 32"),
            text.out.constData());
        QVERIFY(inference.value(QStringLiteral("vllm_command")).toString().startsWith(QStringLiteral("vllm serve")));
    }

    // The report of a pipeline plan: a bar and a row per stage, the estimators beside ours; of a
    // serving plan: the KV cache band and vLLM's tokens.
    void clusterReports()
    {
        const Run pipeline = oomlens({ QStringLiteral("--model"), fixture("llama-2-70b.config.json"),
            QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--nodes"), QStringLiteral("4"),
            QStringLiteral("--tp"), QStringLiteral("8"), QStringLiteral("--pp"), QStringLiteral("4"),
            QStringLiteral("--card"), QStringLiteral("80GB"), QStringLiteral("--report"), QStringLiteral("-") });
        QCOMPARE(pipeline.exitCode, 0);
        QVERIFY(pipeline.out.contains("<h3>Pipeline stages</h3>"));
        QVERIFY(pipeline.out.contains("Published estimators beside the planner"));
        QVERIFY(pipeline.out.contains("in stage 3: "));
        QVERIFY(!pipeline.out.contains("band cat-kv")); // training keeps no KV cache
        const Run serving
            = oomlens({ QStringLiteral("--model"), fixture("llama-2-70b.config.json"), QStringLiteral("--inference"),
                QStringLiteral("--gpus"), QStringLiteral("4"), QStringLiteral("--tp"), QStringLiteral("4"),
                QStringLiteral("--batch"), QStringLiteral("64"), QStringLiteral("--seq"), QStringLiteral("4096"),
                QStringLiteral("--card"), QStringLiteral("80GB"), QStringLiteral("--report"), QStringLiteral("-") });
        QCOMPARE(serving.exitCode, 0);
        QVERIFY(serving.out.contains("band cat-kv"));
        QVERIFY(serving.out.contains("vLLM at gpu_memory_utilization 0.90"));
    }

    void clusterUsageErrors()
    {
        QCOMPARE(oomlens({ QStringLiteral("--params"), QStringLiteral("7e9"), QStringLiteral("--kv-dtype"),
                             QStringLiteral("fp8") })
                     .exitCode,
            2);
        QCOMPARE(oomlens({ QStringLiteral("--params"), QStringLiteral("7e9"), QStringLiteral("--inference"),
                             QStringLiteral("--kv-dtype"), QStringLiteral("int3") })
                     .exitCode,
            2);
        const Run uneven = oomlens({ QStringLiteral("--params"), QStringLiteral("7e9"), QStringLiteral("--gpus"),
            QStringLiteral("8"), QStringLiteral("--tp"), QStringLiteral("3") });
        QCOMPARE(uneven.exitCode, 2);
        QVERIFY2(uneven.err.contains("do not split"), uneven.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestPlanCli)
#include "tst_plancli.moc"
