#include "app/cli/plancommand.h"

#include "app/cli/commandline.h"
#include "app/cli/inputs.h"
#include "app/cli/reportfile.h"
#include "core/caseanalysis.h"
#include "core/planner/planjson.h"
#include "core/planner/plantext.h"
#include "opening/planrequest.h"

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

namespace {

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

// Each setting's option, in the order of the help.
std::vector<std::pair<PlanField, const Option*>> fieldOptions(const PlanOptions& o)
{
    return { { PlanField::Model, &o.model }, { PlanField::Params, &o.params }, { PlanField::Layers, &o.layers },
        { PlanField::Hidden, &o.hidden }, { PlanField::Heads, &o.heads }, { PlanField::KvHeads, &o.kvHeads },
        { PlanField::Vocab, &o.vocab }, { PlanField::Ffn, &o.ffn }, { PlanField::Experts, &o.experts },
        { PlanField::ExpertsPerToken, &o.expertsPerToken }, { PlanField::ExpertFfn, &o.expertFfn },
        { PlanField::SharedExperts, &o.sharedExperts }, { PlanField::Batch, &o.batch }, { PlanField::Seq, &o.seq },
        { PlanField::Precision, &o.precision }, { PlanField::Optimizer, &o.optimizer },
        { PlanField::Accumulation, &o.accumulation }, { PlanField::Checkpointing, &o.checkpointing },
        { PlanField::Attention, &o.attention }, { PlanField::Gpus, &o.gpus }, { PlanField::Nodes, &o.nodes },
        { PlanField::Zero, &o.zero }, { PlanField::Offload, &o.offload }, { PlanField::LoraRank, &o.loraRank },
        { PlanField::Qlora, &o.qlora }, { PlanField::LoraTargets, &o.loraTargets }, { PlanField::Tp, &o.tp },
        { PlanField::SequenceParallel, &o.sequenceParallel }, { PlanField::Cp, &o.cp }, { PlanField::Pp, &o.pp },
        { PlanField::Vpp, &o.vpp }, { PlanField::Microbatches, &o.microbatches }, { PlanField::Ep, &o.ep },
        { PlanField::DistributedOptimizer, &o.distributedOptimizer }, { PlanField::Inference, &o.inference },
        { PlanField::KvDtype, &o.kvDtype }, { PlanField::WeightDtype, &o.weightDtype },
        { PlanField::GpuMemoryUtilization, &o.gpuMemoryUtilization }, { PlanField::Card, &o.card },
        { PlanField::Snapshot, &o.snapshot }, { PlanField::Device, &o.device } };
}

// The flags given, as a plan request.
PlanRequest requestFromFlags(const OptionParser& parser, const PlanOptions& o)
{
    PlanRequest request;
    for (const auto& [field, option] : fieldOptions(o)) {
        if (!parser.isSet(*option))
            continue;
        if (isPlanSwitch(field))
            request.switches.insert(field);
        else
            request.values[field] = parser.value(*option);
    }
    return request;
}

// The command line names a setting by its flag.
const PlanWording flagWording { [](PlanField field) { return "--" + std::string(planFieldName(field)); },
    "see --help" };

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
    for (const auto& [field, option] : fieldOptions(o))
        parser.addOption(*option);
    parser.addOptions({ o.json, o.report });
    if ((run.stop = commandLine.parse(arguments)))
        return run;
    if (!parser.positionalArguments().empty()) {
        run.stop = commandLine.usageError("unexpected argument '" + parser.positionalArguments().front() + "'");
        return run;
    }

    PlanReading reading = readPlanRequest(requestFromFlags(parser, o), flagWording);
    printFailures(reading.failures);
    if (reading.problem) {
        run.stop = commandLine.usageError(*reading.problem);
        return run;
    }
    if (!reading.planned()) {
        run.stop = 1;
        return run;
    }
    run.result = std::move(reading.result);
    run.input = std::move(reading.input);
    run.analysisOptions = reading.analysisOptions;
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
