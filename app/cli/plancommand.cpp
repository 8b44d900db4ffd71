#include "app/cli/plancommand.h"

#include "app/cli/commandline.h"
#include "app/cli/errorlines.h"
#include "app/cli/inputs.h"
#include "app/cli/numbertext.h"
#include "app/cli/reportfile.h"
#include "core/caseanalysis.h"
#include "core/planner/planjson.h"
#include "core/planner/plantext.h"
#include "opening/modelsource.h"

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

namespace {

using namespace oomlens::planner;

struct PlanOptions
{
    Option model { "model",
        "A Hugging Face config.json, or a preset: gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b, "
        "llama-2-13b, llama-2-70b, llama-65b, mistral-7b, llama-3-70b, mixtral-8x7b.",
        "FILE" };
    Option params { "params", "Parameter count (1.3e9 works).", "N" };
    Option layers { "layers", "Transformer blocks.", "N" };
    Option hidden { "hidden", "Hidden size.", "N" };
    Option heads { "heads", "Attention heads.", "N" };
    Option kvHeads { "kv-heads", "Key/value heads (grouped-query attention).", "N" };
    Option vocab { "vocab", "Vocabulary size.", "N" };
    Option ffn { "ffn", "MLP inner size (default 4 x hidden).", "N" };
    Option experts { "experts", "Routed experts per MoE layer.", "N" };
    Option expertsPerToken { "experts-per-token", "Experts each token visits (top-k, default 1 with --experts).", "K" };
    Option expertFfn { "expert-ffn", "An expert's MLP inner size (default --ffn).", "N" };
    Option sharedExperts { "shared-experts", "Shared experts every token visits.", "N" };
    Option batch { "batch", "Micro-batch per GPU (default 1); with --inference the concurrent sequences.", "N" };
    Option seq { "seq", "Sequence length (default 1024).", "N" };
    Option precision { "precision", "fp32, mixed-fp16, mixed-bf16 (default) or bf16.", "P" };
    Option optimizer { "optimizer",
        "adamw (default, foreach), adamw-fused, adamw-8bit, adamw-paged-8bit, sgd or adafactor.", "O" };
    Option accumulation { "accumulation", "Gradient accumulation steps (default 1).", "N" };
    Option checkpointing { "checkpointing",
        "none (default), full, every:K (every K-th block) or selective (Megatron's: the attention core).", "C" };
    Option attention { "attention", "eager or sdpa (default).", "A" };
    Option gpus { "gpus", "GPUs per node (default 1).", "N" };
    Option nodes { "nodes", "Nodes (default 1).", "N" };
    Option zero { "zero", "ZeRO stage 0, 1, 2 or 3 (default 0: DDP).", "K" };
    Option offload { "offload", "none (default), optimizer or all.", "O" };
    Option loraRank { "lora-rank", "Train LoRA adapters of rank R.", "R" };
    Option qlora { "qlora", "With --lora-rank: the base in 4-bit NF4." };
    Option loraTargets { "lora-targets",
        "With --lora-rank: adapters on all linear layers (default), attention (q, k, v, o) or qv.", "T" };
    Option tp { "tp", "Tensor-parallel degree (default 1).", "N" };
    Option sequenceParallel { "sequence-parallel",
        "With --tp: split the norms' and dropouts' activations too (Megatron's sequence parallelism)." };
    Option cp { "cp", "Context-parallel degree: the sequence split (default 1).", "N" };
    Option pp { "pp", "Pipeline stages (default 1).", "N" };
    Option vpp { "vpp", "Model chunks per pipeline rank (interleaved 1F1B; default 1: not interleaved).", "N" };
    Option microbatches { "microbatches", "Microbatches per pipeline per step (default: enough to fill the pipeline).",
        "M" };
    Option ep { "ep", "Expert-parallel degree (default 1).", "N" };
    Option distributedOptimizer { "distributed-optimizer",
        "Megatron's distributed optimizer: master weights and optimizer state sharded over data "
        "parallel." };
    Option inference { "inference",
        "Plan serving: --batch concurrent sequences of --seq tokens, the KV cache, vLLM's budget." };
    Option kvDtype { "kv-dtype", "With --inference: the KV cache's type, fp16, bf16 (default) or fp8.", "T" };
    Option weightDtype { "weight-dtype",
        "With --inference: the weights' format, auto (the precision's), bf16, fp8, int8 or int4.", "T" };
    Option gpuMemoryUtilization { "gpu-memory-utilization",
        "With --inference: the share of the card vLLM may use (default 0.9).", "F" };
    Option card { "card", "The GPU: 16GB ... 141GB, a100-40gb, h100, 4090, ... or a size in bytes/GiB.", "NAME|BYTES" };
    Option snapshot { "snapshot", "A snapshot of a run of this set-up: calibrate the formula by measurement.", "FILE" };
    Option device { "device", "The snapshot's device (default: primary).", "N" };
    Option json { "json", "Print one JSON object instead of text." };
    Option report { { "o", "report" },
        "Also write the plan as a self-contained HTML report to FILE ('-' for standard output).", "FILE" };
};

// A positive count; "1.3e9" and "7000000000" both read.
bool readCount(const CommandLine& commandLine, const Option& option, uint64_t& into, uint64_t minimum = 1)
{
    const OptionParser& parser = commandLine.parser();
    if (!parser.isSet(option))
        return true;
    const std::string text = parser.value(option);
    const std::optional<double> value = doubleFromText(text);
    // Written so that "nan" fails too: no comparison with it holds.
    if (!value || !(*value >= static_cast<double>(minimum)) || !(*value <= 1e15)) {
        commandLine.usageError("--" + option.names.front() + " needs a number, got '" + text + "'");
        return false;
    }
    into = static_cast<uint64_t>(*value);
    return true;
}

bool readInt(const CommandLine& commandLine, const Option& option, int& into, int minimum = 1)
{
    uint64_t value = static_cast<uint64_t>(into);
    if (!readCount(commandLine, option, value, static_cast<uint64_t>(minimum)))
        return false;
    if (value > (1u << 30)) {
        commandLine.usageError("--" + option.names.front() + " is too large");
        return false;
    }
    into = static_cast<int>(value);
    return true;
}

template <typename Enum, typename FromName>
bool readChoice(const CommandLine& commandLine, const Option& option, Enum& into, FromName fromName)
{
    const OptionParser& parser = commandLine.parser();
    if (!parser.isSet(option))
        return true;
    const std::string text = parser.value(option);
    const auto value = fromName(text);
    if (!value) {
        commandLine.usageError("--" + option.names.front() + " does not know '" + text + "' (see --help)");
        return false;
    }
    into = *value;
    return true;
}

// The model from --model (a file or a preset) or --params, with any dimension flags on top.
// Returns the exit status on failure.
std::optional<int> readModel(const CommandLine& commandLine, const PlanOptions& o, ModelSpec& model)
{
    const OptionParser& parser = commandLine.parser();
    if (parser.isSet(o.model)) {
        ModelRead read = readModelSource(parser.value(o.model));
        if (!read.model) {
            printErrorLine(failureLine(*read.failure, FailureReader::CommandLine));
            return 1;
        }
        model = std::move(*read.model);
    } else if (!parser.isSet(o.params) && !parser.isSet(o.layers)) {
        return commandLine.usageError("give a model: --model FILE|PRESET or --params N");
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
        return commandLine.usageError("the model: " + problem);
    if (model.totalParameters() == 0)
        return commandLine.usageError(
            "--params is needed unless --layers, --hidden, --heads and --vocab give the whole model");
    return std::nullopt;
}

std::optional<int> readSetup(const CommandLine& commandLine, const PlanOptions& o, TrainingSetup& setup)
{
    const OptionParser& parser = commandLine.parser();
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
            "--kv-dtype, --weight-dtype and --gpu-memory-utilization plan serving: add --inference");
    if (!readChoice(commandLine, o.kvDtype, setup.kvDtype, kvDtypeFromName)
        || !readChoice(commandLine, o.weightDtype, setup.weights, weightFormatFromName))
        return 2;
    if (parser.isSet(o.gpuMemoryUtilization)) {
        const std::optional<double> share = doubleFromText(parser.value(o.gpuMemoryUtilization));
        if (!share)
            return commandLine.usageError("--gpu-memory-utilization needs a number such as 0.9");
        setup.gpuMemoryUtilization = *share;
    }
    if (parser.isSet(o.checkpointing) && !readCheckpointing(parser.value(o.checkpointing), setup))
        return commandLine.usageError(
            "--checkpointing does not know '" + parser.value(o.checkpointing) + "' (none, full, selective or every:K)");
    setup.quantizedBase = parser.isSet(o.qlora);
    const std::string problem = setupProblem(setup);
    if (!problem.empty())
        return commandLine.usageError(problem);
    return std::nullopt;
}

} // namespace

PlanRun readPlanRun(const std::vector<std::string>& arguments)
{
    PlanRun run;
    CommandLine commandLine("plan (--model FILE|PRESET | --params N) [set-up options] [--card NAME] [--json]",
        "Plans a training run's GPU memory: bytes per GPU by band, the peak phase, host memory, "
        "whether it fits the card, the largest micro-batch, the fix ladder, a ds_config.json and its FSDP / "
        "accelerate equivalents. With --tp/--pp/--cp/--ep, Megatron's layout per pipeline stage; with "
        "--inference, serving: the KV cache and what vLLM makes of the card.");
    const PlanOptions o;
    OptionParser& parser = commandLine.parser();
    parser.addOptions({ o.model, o.params, o.layers, o.hidden, o.heads, o.kvHeads, o.vocab, o.ffn, o.experts,
        o.expertsPerToken, o.expertFfn, o.sharedExperts, o.batch, o.seq, o.precision, o.optimizer, o.accumulation,
        o.checkpointing, o.attention, o.gpus, o.nodes, o.zero, o.offload, o.loraRank, o.qlora, o.loraTargets, o.tp,
        o.sequenceParallel, o.cp, o.pp, o.vpp, o.microbatches, o.ep, o.distributedOptimizer, o.inference, o.kvDtype,
        o.weightDtype, o.gpuMemoryUtilization, o.card, o.snapshot, o.device, o.json, o.report });
    if ((run.stop = commandLine.parse(arguments)))
        return run;
    if (!parser.positionalArguments().empty()) {
        run.stop = commandLine.usageError("unexpected argument '" + parser.positionalArguments().front() + "'");
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
        card = cardFromText(parser.value(o.card));
        if (!card) {
            run.stop = commandLine.usageError("--card does not know '" + parser.value(o.card)
                + "' (16GB, 24GB, 40GB, 48GB, 80GB, 94GB, 141GB, a card name or a size)");
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

int runPlan(const std::vector<std::string>& arguments)
{
    const PlanRun run = readPlanRun(arguments);
    if (run.stop)
        return *run.stop;
    if (!run.reportPath.empty()) {
        const CaseAnalysis caseAnalysis = analyzeCase(run.input, run.analysisOptions);
        report::ReportOptions reportOptions;
        reportOptions.plan = &run.result;
        if (!writeReportFile(run.reportPath, run.input, caseAnalysis, reportOptions))
            return 1;
        if (run.reportPath == "-")
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
