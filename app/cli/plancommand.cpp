#include "app/cli/plancommand.h"

#include "app/cli/commandline.h"
#include "app/cli/errorlines.h"
#include "app/cli/inputs.h"
#include "app/cli/reportfile.h"
#include "core/caseanalysis.h"
#include "core/planner/hfconfig.h"
#include "core/planner/planjson.h"
#include "core/planner/plantext.h"
#include "core/report/htmlreport.h"
#include "parsers/inputfile.h"

#include <QDateTime>
#include <QFile>

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

namespace {

using namespace oomlens::planner;

struct PlanOptions
{
    QCommandLineOption model { QStringLiteral("model"),
        QStringLiteral("A Hugging Face config.json, or a preset: gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b, "
                       "llama-2-13b, llama-2-70b, llama-65b, mistral-7b, llama-3-70b, mixtral-8x7b."),
        QStringLiteral("FILE") };
    QCommandLineOption params { QStringLiteral("params"), QStringLiteral("Parameter count (1.3e9 works)."),
        QStringLiteral("N") };
    QCommandLineOption layers { QStringLiteral("layers"), QStringLiteral("Transformer blocks."), QStringLiteral("N") };
    QCommandLineOption hidden { QStringLiteral("hidden"), QStringLiteral("Hidden size."), QStringLiteral("N") };
    QCommandLineOption heads { QStringLiteral("heads"), QStringLiteral("Attention heads."), QStringLiteral("N") };
    QCommandLineOption kvHeads { QStringLiteral("kv-heads"),
        QStringLiteral("Key/value heads (grouped-query attention)."), QStringLiteral("N") };
    QCommandLineOption vocab { QStringLiteral("vocab"), QStringLiteral("Vocabulary size."), QStringLiteral("N") };
    QCommandLineOption ffn { QStringLiteral("ffn"), QStringLiteral("MLP inner size (default 4 x hidden)."),
        QStringLiteral("N") };
    QCommandLineOption experts { QStringLiteral("experts"), QStringLiteral("Routed experts per MoE layer."),
        QStringLiteral("N") };
    QCommandLineOption expertsPerToken { QStringLiteral("experts-per-token"),
        QStringLiteral("Experts each token visits (top-k, default 1 with --experts)."), QStringLiteral("K") };
    QCommandLineOption expertFfn { QStringLiteral("expert-ffn"),
        QStringLiteral("An expert's MLP inner size (default --ffn)."), QStringLiteral("N") };
    QCommandLineOption sharedExperts { QStringLiteral("shared-experts"),
        QStringLiteral("Shared experts every token visits."), QStringLiteral("N") };
    QCommandLineOption batch { QStringLiteral("batch"),
        QStringLiteral("Micro-batch per GPU (default 1); with --inference the concurrent sequences."),
        QStringLiteral("N") };
    QCommandLineOption seq { QStringLiteral("seq"), QStringLiteral("Sequence length (default 1024)."),
        QStringLiteral("N") };
    QCommandLineOption precision { QStringLiteral("precision"),
        QStringLiteral("fp32, mixed-fp16, mixed-bf16 (default) or bf16."), QStringLiteral("P") };
    QCommandLineOption optimizer { QStringLiteral("optimizer"),
        QStringLiteral("adamw (default, foreach), adamw-fused, adamw-8bit, adamw-paged-8bit, sgd or adafactor."),
        QStringLiteral("O") };
    QCommandLineOption accumulation { QStringLiteral("accumulation"),
        QStringLiteral("Gradient accumulation steps (default 1)."), QStringLiteral("N") };
    QCommandLineOption checkpointing { QStringLiteral("checkpointing"),
        QStringLiteral(
            "none (default), full, every:K (every K-th block) or selective (Megatron's: the attention core)."),
        QStringLiteral("C") };
    QCommandLineOption attention { QStringLiteral("attention"), QStringLiteral("eager or sdpa (default)."),
        QStringLiteral("A") };
    QCommandLineOption gpus { QStringLiteral("gpus"), QStringLiteral("GPUs per node (default 1)."),
        QStringLiteral("N") };
    QCommandLineOption nodes { QStringLiteral("nodes"), QStringLiteral("Nodes (default 1)."), QStringLiteral("N") };
    QCommandLineOption zero { QStringLiteral("zero"), QStringLiteral("ZeRO stage 0, 1, 2 or 3 (default 0: DDP)."),
        QStringLiteral("K") };
    QCommandLineOption offload { QStringLiteral("offload"), QStringLiteral("none (default), optimizer or all."),
        QStringLiteral("O") };
    QCommandLineOption loraRank { QStringLiteral("lora-rank"), QStringLiteral("Train LoRA adapters of rank R."),
        QStringLiteral("R") };
    QCommandLineOption qlora { QStringLiteral("qlora"), QStringLiteral("With --lora-rank: the base in 4-bit NF4.") };
    QCommandLineOption loraTargets { QStringLiteral("lora-targets"),
        QStringLiteral("With --lora-rank: adapters on all linear layers (default), attention (q, k, v, o) or qv."),
        QStringLiteral("T") };
    QCommandLineOption tp { QStringLiteral("tp"), QStringLiteral("Tensor-parallel degree (default 1)."),
        QStringLiteral("N") };
    QCommandLineOption sequenceParallel { QStringLiteral("sequence-parallel"),
        QStringLiteral(
            "With --tp: split the norms' and dropouts' activations too (Megatron's sequence parallelism).") };
    QCommandLineOption cp { QStringLiteral("cp"),
        QStringLiteral("Context-parallel degree: the sequence split (default 1)."), QStringLiteral("N") };
    QCommandLineOption pp { QStringLiteral("pp"), QStringLiteral("Pipeline stages (default 1)."), QStringLiteral("N") };
    QCommandLineOption vpp { QStringLiteral("vpp"),
        QStringLiteral("Model chunks per pipeline rank (interleaved 1F1B; default 1: not interleaved)."),
        QStringLiteral("N") };
    QCommandLineOption microbatches { QStringLiteral("microbatches"),
        QStringLiteral("Microbatches per pipeline per step (default: enough to fill the pipeline)."),
        QStringLiteral("M") };
    QCommandLineOption ep { QStringLiteral("ep"), QStringLiteral("Expert-parallel degree (default 1)."),
        QStringLiteral("N") };
    QCommandLineOption distributedOptimizer { QStringLiteral("distributed-optimizer"),
        QStringLiteral("Megatron's distributed optimizer: master weights and optimizer state sharded over data "
                       "parallel.") };
    QCommandLineOption inference { QStringLiteral("inference"),
        QStringLiteral("Plan serving: --batch concurrent sequences of --seq tokens, the KV cache, vLLM's budget.") };
    QCommandLineOption kvDtype { QStringLiteral("kv-dtype"),
        QStringLiteral("With --inference: the KV cache's type, fp16, bf16 (default) or fp8."), QStringLiteral("T") };
    QCommandLineOption weightDtype { QStringLiteral("weight-dtype"),
        QStringLiteral("With --inference: the weights' format, auto (the precision's), bf16, fp8, int8 or int4."),
        QStringLiteral("T") };
    QCommandLineOption gpuMemoryUtilization { QStringLiteral("gpu-memory-utilization"),
        QStringLiteral("With --inference: the share of the card vLLM may use (default 0.9)."), QStringLiteral("F") };
    QCommandLineOption card { QStringLiteral("card"),
        QStringLiteral("The GPU: 16GB ... 141GB, a100-40gb, h100, 4090, ... or a size in bytes/GiB."),
        QStringLiteral("NAME|BYTES") };
    QCommandLineOption snapshot { QStringLiteral("snapshot"),
        QStringLiteral("A snapshot of a run of this set-up: calibrate the formula by measurement."),
        QStringLiteral("FILE") };
    QCommandLineOption device { QStringLiteral("device"), QStringLiteral("The snapshot's device (default: primary)."),
        QStringLiteral("N") };
    QCommandLineOption json { QStringLiteral("json"), QStringLiteral("Print one JSON object instead of text.") };
    QCommandLineOption report { { QStringLiteral("o"), QStringLiteral("report") },
        QStringLiteral("Also write the plan as a self-contained HTML report to FILE ('-' for standard output)."),
        QStringLiteral("FILE") };
};

// A positive count; "1.3e9" and "7000000000" both read.
bool readCount(const CommandLine& commandLine, const QCommandLineOption& option, uint64_t& into, uint64_t minimum = 1)
{
    const QCommandLineParser& parser = const_cast<CommandLine&>(commandLine).parser();
    if (!parser.isSet(option))
        return true;
    const QString text = parser.value(option);
    bool ok = false;
    const double value = text.toDouble(&ok);
    if (!ok || value < static_cast<double>(minimum) || value > 1e15) {
        commandLine.usageError(QStringLiteral("--%1 needs a number, got '%2'").arg(option.names().front(), text));
        return false;
    }
    into = static_cast<uint64_t>(value);
    return true;
}

bool readInt(const CommandLine& commandLine, const QCommandLineOption& option, int& into, int minimum = 1)
{
    uint64_t value = static_cast<uint64_t>(into);
    if (!readCount(commandLine, option, value, static_cast<uint64_t>(minimum)))
        return false;
    if (value > (1u << 30)) {
        commandLine.usageError(QStringLiteral("--%1 is too large").arg(option.names().front()));
        return false;
    }
    into = static_cast<int>(value);
    return true;
}

template <typename Enum, typename FromName>
bool readChoice(const CommandLine& commandLine, const QCommandLineOption& option, Enum& into, FromName fromName)
{
    const QCommandLineParser& parser = const_cast<CommandLine&>(commandLine).parser();
    if (!parser.isSet(option))
        return true;
    const QString text = parser.value(option);
    const auto value = fromName(text.toStdString());
    if (!value) {
        commandLine.usageError(
            QStringLiteral("--%1 does not know '%2' (see --help)").arg(option.names().front(), text));
        return false;
    }
    into = *value;
    return true;
}

// The model from --model (a file or a preset) or --params, with any dimension flags on top.
// Returns the exit status on failure.
std::optional<int> readModel(const CommandLine& commandLine, const PlanOptions& o, ModelSpec& model)
{
    const QCommandLineParser& parser = const_cast<CommandLine&>(commandLine).parser();
    if (parser.isSet(o.model)) {
        const QString source = parser.value(o.model);
        if (const auto named = modelPreset(source.toStdString())) {
            model = *named;
        } else {
            // A config.json is a few KB; the bound keeps a device or an endless pipe from hanging.
            std::string error;
            const std::optional<std::string> bytes = readSmallFile(source.toStdString(), uint64_t(16) << 20, &error);
            if (!bytes) {
                printErrorLine(
                    QStringLiteral("oomlens: %1: %2 (nor a preset name)").arg(source, QString::fromStdString(error)));
                return 1;
            }
            const HfConfigResult parsed = modelFromHfConfig(*bytes);
            if (!parsed.model) {
                printErrorLine(QStringLiteral("oomlens: %1: not a model config.json: %2")
                                   .arg(source, QString::fromStdString(parsed.error)));
                return 1;
            }
            model = *parsed.model;
        }
    } else if (!parser.isSet(o.params) && !parser.isSet(o.layers)) {
        return commandLine.usageError(QStringLiteral("give a model: --model FILE|PRESET or --params N"));
    } else {
        model.name = "custom";
    }
    uint64_t parameters = model.parameters;
    if (!readCount(commandLine, o.params, parameters))
        return 2;
    model.parameters = parameters;
    for (const auto& [option, field] : { std::pair { &o.layers, &model.layers }, std::pair { &o.hidden, &model.hidden },
             std::pair { &o.heads, &model.heads }, std::pair { &o.kvHeads, &model.kvHeads },
             std::pair { &o.vocab, &model.vocab }, std::pair { &o.ffn, &model.ffn },
             std::pair { &o.experts, &model.experts }, std::pair { &o.expertsPerToken, &model.expertsPerToken },
             std::pair { &o.expertFfn, &model.expertFfn }, std::pair { &o.sharedExperts, &model.sharedExperts } }) {
        if (!readInt(commandLine, *option, *field))
            return 2;
    }
    if (const std::string problem = model.sizeProblem(); !problem.empty())
        return commandLine.usageError(QStringLiteral("the model: %1").arg(QString::fromStdString(problem)));
    if (model.totalParameters() == 0)
        return commandLine.usageError(QStringLiteral("--params is needed unless --layers, --hidden, --heads and "
                                                     "--vocab give the whole model"));
    return std::nullopt;
}

std::optional<int> readSetup(const CommandLine& commandLine, const PlanOptions& o, TrainingSetup& setup)
{
    const QCommandLineParser& parser = const_cast<CommandLine&>(commandLine).parser();
    if (!readInt(commandLine, o.batch, setup.microBatch) || !readInt(commandLine, o.seq, setup.sequence)
        || !readInt(commandLine, o.accumulation, setup.gradientAccumulation)
        || !readInt(commandLine, o.gpus, setup.gpusPerNode) || !readInt(commandLine, o.nodes, setup.nodes)
        || !readInt(commandLine, o.zero, setup.zeroStage, 0) || !readInt(commandLine, o.loraRank, setup.loraRank, 0))
        return 2;
    if (!readChoice(commandLine, o.precision, setup.precision, precisionFromName)
        || !readChoice(commandLine, o.optimizer, setup.optimizer, optimizerFromName)
        || !readChoice(commandLine, o.attention, setup.attention, attentionFromName)
        || !readChoice(commandLine, o.offload, setup.offload, offloadFromName)
        || !readChoice(commandLine, o.loraTargets, setup.loraTargets, loraTargetsFromName))
        return 2;
    Parallelism& parallel = setup.parallel;
    if (!readInt(commandLine, o.tp, parallel.tensor) || !readInt(commandLine, o.cp, parallel.context)
        || !readInt(commandLine, o.pp, parallel.pipeline) || !readInt(commandLine, o.vpp, parallel.virtualStages)
        || !readInt(commandLine, o.microbatches, parallel.microbatches) || !readInt(commandLine, o.ep, parallel.expert))
        return 2;
    parallel.sequenceParallel = parser.isSet(o.sequenceParallel);
    parallel.distributedOptimizer = parser.isSet(o.distributedOptimizer);
    setup.inference = parser.isSet(o.inference);
    if (!setup.inference
        && (parser.isSet(o.kvDtype) || parser.isSet(o.weightDtype) || parser.isSet(o.gpuMemoryUtilization)))
        return commandLine.usageError(
            QStringLiteral("--kv-dtype, --weight-dtype and --gpu-memory-utilization plan serving: add --inference"));
    if (!readChoice(commandLine, o.kvDtype, setup.kvDtype, kvDtypeFromName)
        || !readChoice(commandLine, o.weightDtype, setup.weights, weightFormatFromName))
        return 2;
    if (parser.isSet(o.gpuMemoryUtilization)) {
        bool ok = false;
        setup.gpuMemoryUtilization = parser.value(o.gpuMemoryUtilization).toDouble(&ok);
        if (!ok)
            return commandLine.usageError(QStringLiteral("--gpu-memory-utilization needs a number such as 0.9"));
    }
    if (parser.isSet(o.checkpointing) && !readCheckpointing(parser.value(o.checkpointing).toStdString(), setup))
        return commandLine.usageError(
            QStringLiteral("--checkpointing does not know '%1' (none, full, selective or every:K)")
                .arg(parser.value(o.checkpointing)));
    setup.quantizedBase = parser.isSet(o.qlora);
    const std::string problem = setupProblem(setup);
    if (!problem.empty())
        return commandLine.usageError(QString::fromStdString(problem));
    return std::nullopt;
}

} // namespace

PlanRun readPlanRun(const QStringList& arguments)
{
    PlanRun run;
    CommandLine commandLine("plan (--model FILE|PRESET | --params N) [set-up options] [--card NAME] [--json]",
        QStringLiteral(
            "Plans a training run's GPU memory: bytes per GPU by band, the peak phase, host memory, "
            "whether it fits the card, the largest micro-batch, the fix ladder, a ds_config.json and its FSDP / "
            "accelerate equivalents. With --tp/--pp/--cp/--ep, Megatron's layout per pipeline stage; with "
            "--inference, serving: the KV cache and what vLLM makes of the card."));
    const PlanOptions o;
    QCommandLineParser& parser = commandLine.parser();
    parser.addOptions({ o.model, o.params, o.layers, o.hidden, o.heads, o.kvHeads, o.vocab, o.ffn, o.experts,
        o.expertsPerToken, o.expertFfn, o.sharedExperts, o.batch, o.seq, o.precision, o.optimizer, o.accumulation,
        o.checkpointing, o.attention, o.gpus, o.nodes, o.zero, o.offload, o.loraRank, o.qlora, o.loraTargets, o.tp,
        o.sequenceParallel, o.cp, o.pp, o.vpp, o.microbatches, o.ep, o.distributedOptimizer, o.inference, o.kvDtype,
        o.weightDtype, o.gpuMemoryUtilization, o.card, o.snapshot, o.device, o.json, o.report });
    if ((run.stop = commandLine.parse(arguments)))
        return run;
    if (!parser.positionalArguments().isEmpty()) {
        run.stop = commandLine.usageError(
            QStringLiteral("unexpected argument '%1'").arg(parser.positionalArguments().front()));
        return run;
    }

    ModelSpec model;
    if ((run.stop = readModel(commandLine, o, model)))
        return run;
    TrainingSetup setup;
    if ((run.stop = readSetup(commandLine, o, setup)))
        return run;
    std::optional<GpuCard> card;
    if (parser.isSet(o.card)) {
        card = cardFromText(parser.value(o.card).toStdString());
        if (!card) {
            run.stop = commandLine.usageError(QStringLiteral("--card does not know '%1' (16GB, 24GB, 40GB, 48GB, 80GB, "
                                                             "94GB, 141GB, a card name or a size)")
                                                  .arg(parser.value(o.card)));
            return run;
        }
    }

    if (!commandLine.readDevice(o.device, run.analysisOptions.device)) {
        run.stop = 2;
        return run;
    }
    std::optional<SnapshotAnalysis> analysis;
    if (parser.isSet(o.snapshot)) {
        LoadedSnapshot snapshot = loadSnapshotInput(parser.value(o.snapshot), run.analysisOptions);
        if (snapshot.status != 0) {
            run.stop = snapshot.status;
            return run;
        }
        run.input = std::move(snapshot.input);
        analysis = std::move(snapshot.analysis);
    }

    run.result = makePlan(model, setup, card, analysis ? analysis->primary() : nullptr);
    run.json = parser.isSet(o.json);
    run.reportPath = parser.value(o.report);
    return run;
}

int runPlan(const QStringList& arguments)
{
    const PlanRun run = readPlanRun(arguments);
    if (run.stop)
        return *run.stop;
    if (!run.reportPath.isEmpty()) {
        const CaseAnalysis caseAnalysis = analyzeCase(run.input, run.analysisOptions);
        report::ReportOptions reportOptions;
        reportOptions.plan = &run.result;
        reportOptions.generatedAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
        if (!writeReportFile(run.reportPath, report::buildHtmlReport(run.input, caseAnalysis, reportOptions)))
            return 1;
        if (run.reportPath == QLatin1String("-"))
            return 0; // the report is the output
    }
    if (run.json)
        std::cout << planToJson(run.result).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                  << '\n';
    else
        std::cout << planToText(run.result);
    std::cout.flush();
    return 0;
}

} // namespace oomlens::cli
