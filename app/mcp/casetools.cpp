// The tools that answer what a CLI command answers, from the same code: diagnose (`diagnose
// --json`), report (`report -o`), compare (`compare --json`) and plan (`plan --json`).

#include "app/mcp/arguments.h"
#include "app/mcp/casecache.h"
#include "app/mcp/tool.h"
#include "app/mcp/toolinputs.h"
#include "core/compare/comparison.h"
#include "core/compare/comparisonjson.h"
#include "core/job/jobjson.h"
#include "core/jsonexport.h"
#include "core/planner/modelspec.h"
#include "core/planner/planjson.h"
#include "core/units.h"
#include "opening/planrequest.h"
#include "opening/reportwriter.h"

#include <algorithm>

namespace oomlens::mcp {

namespace {

std::string diagnosisSummary(const Json& document)
{
    const Json& diagnoses = document["diagnoses"];
    if (diagnoses.empty())
        return "No diagnosis: the inputs show no out-of-memory failure (see \"snapshots\" for the peak and headroom).";
    const Json& top = diagnoses.front();
    std::string text = std::to_string(diagnoses.size()) + (diagnoses.size() == 1 ? " diagnosis" : " diagnoses")
        + ", most likely first. " + top.value("title", std::string()) + " (" + top.value("id", std::string())
        + ", confidence " + std::to_string(top.value("confidence", 0.0)).substr(0, 4) + ")";
    if (top.contains("summary") && top["summary"].is_string() && !top["summary"].get<std::string>().empty())
        text += ": " + top["summary"].get<std::string>();
    if (top.contains("fixes") && !top["fixes"].empty())
        text += "\nFirst fix: " + top["fixes"].front().value("title", std::string());
    if (document.contains("serving") && document["serving"].is_object()) {
        const Json& serving = document["serving"];
        text += "\nWorkload: inference, " + serving.value("engine_label", std::string());
        if (serving.contains("version") && serving["version"].is_string())
            text += " " + serving["version"].get<std::string>();
    }
    if (document.contains("job") && document["job"].is_object() && document["job"].contains("failing_rank")
        && !document["job"]["failing_rank"].is_null())
        text += "\nJob: rank " + document["job"]["failing_rank"].dump() + " failed first.";
    return text;
}

ToolResult diagnose(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("diagnose", json, { "inputs", "text", "device" });
    const std::shared_ptr<const CachedCase> loaded = loadCase(cache, readCaseRequest(arguments), control);
    control.stopIfCancelled(); // the document of a big trace takes a second more
    ToolResult result;
    result.structured = loaded->diagnoseDocument();
    result.summary = diagnosisSummary(result.structured);
    return result;
}

ToolResult report(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("report", json, { "inputs", "text", "device", "output" });
    const std::string output = arguments.path("output");
    const std::shared_ptr<const CachedCase> loaded = loadCase(cache, readCaseRequest(arguments), control);
    control.stopIfCancelled();
    report::ReportOptions options;
    if (loaded->job)
        options.job = &*loaded->job;
    const WrittenReport written = writeReport(loaded->input, loaded->analysis, options, output);
    if (!written.ok())
        throw ToolError(written.errorLine());
    ToolResult result;
    const std::string& path = written.path;
    result.structured = { { "path", path }, { "bytes", written.bytes },
        { "diagnoses", loaded->analysis.diagnoses.size() },
        { "top_diagnosis",
            loaded->analysis.diagnoses.empty() ? Json(nullptr)
                                               : Json(diagnosisToJson(loaded->analysis.diagnoses.front())["id"]) } };
    result.summary = "Wrote the HTML report to " + path + " (" + formatBytes(written.bytes) + ").";
    return result;
}

ToolResult compare(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("compare", json, { "a", "b", "windows", "device" });
    const std::optional<int32_t> device = readDevice(arguments);
    const std::string pathA = arguments.path("a");
    const std::vector<std::string> windowTexts = arguments.strings("windows");
    if (arguments.has("b") == !windowTexts.empty())
        arguments.fail("give \"b\" (a second snapshot) or \"windows\" (two step windows of \"a\"), not both");
    std::vector<StepWindow> windows;
    for (const std::string& text : windowTexts) {
        const std::optional<StepWindow> window = parseStepWindow(text);
        if (!window)
            arguments.fail("a window is STEP or FIRST:LAST (FIRST <= LAST), got '" + text + "'");
        windows.push_back(*window);
    }
    if (!windows.empty() && windows.size() != 2)
        arguments.fail("\"windows\" holds two windows: the first, then the second");

    CompareOptions options;
    options.sourceA = pathA;
    CaseCache::SnapshotRef refA;
    CaseCache::SnapshotRef refB; // holds B's case while it is compared
    const SnapshotAnalysis& a = loadSnapshot(cache, pathA, device, refA, control);
    Comparison comparison;
    if (!windows.empty()) {
        options.sourceB = pathA;
        for (const StepWindow& window : windows) {
            const std::string problem = windowProblem(*a.primary(), window);
            if (!problem.empty())
                arguments.fail(problem);
        }
        comparison = compareWindows(a, windows[0], windows[1], options);
    } else {
        options.sourceB = arguments.path("b");
        const SnapshotAnalysis& b = loadSnapshot(cache, options.sourceB, device, refB, control);
        comparison = compareSnapshots(a, b, options);
    }
    ToolResult result;
    result.structured = comparisonToJson(comparison);
    result.summary = comparison.summary;
    return result;
}

// plan's keys are `oomlens plan`'s flags with '_' for '-' (opening/planrequest.h): the tool takes
// exactly what the command takes, read and checked by the same code, its problems naming the keys.
std::string planKey(PlanField field)
{
    std::string key(planFieldName(field));
    std::replace(key.begin(), key.end(), '-', '_');
    return key;
}

const PlanWording keyWording { [](PlanField field) { return "\"" + planKey(field) + "\""; },
    "see the tool's input schema" };

// The tool's arguments as a plan request: a value as a string or a number, a switch as a boolean.
PlanRequest planRequest(const Arguments& arguments)
{
    PlanRequest request;
    for (const PlanField field : planFields()) {
        const std::string key = planKey(field);
        if (isPlanSwitch(field) || !arguments.has(key))
            continue;
        const Json& value = arguments.raw(key);
        std::string text;
        if (value.is_string())
            text = value.get<std::string>();
        else if (value.is_number())
            text = value.dump();
        else
            arguments.fail("\"" + key + "\" must be a string or a number");
        if (field == PlanField::Snapshot)
            text = arguments.path(key);
        // A model is a preset or a config.json's path: the latter only where files may be read.
        if (field == PlanField::Model && !fileArgumentsAllowed() && !planner::modelPreset(text))
            arguments.fail("\"model\": this server reads no files; give a preset");
        request.values[field] = text;
    }
    for (const PlanField field : planFields()) {
        if (isPlanSwitch(field) && arguments.optionalBoolean(planKey(field)).value_or(false))
            request.switches.insert(field);
    }
    return request;
}

ToolResult plan(const Json& json, CaseCache&, const CallControl& control)
{
    std::vector<std::string> known;
    for (const PlanField field : planFields())
        known.push_back(planKey(field));
    const Arguments arguments("plan", json, known);
    PlanReading run = readPlanRequest(planRequest(arguments), keyWording);
    if (run.problem)
        throw ToolError("plan: " + *run.problem);
    if (!run.planned()) {
        std::string lines;
        for (const InputFailure& failure : run.failures)
            lines += (lines.empty() ? "" : "\n") + failureLine(failure, FailureReader::CommandLine);
        throw ToolError(lines);
    }
    control.stopIfCancelled();
    ToolResult result;
    result.structured = planner::planToJson(run.result);
    const Json& planned = result.structured["plan"];
    if (planned.contains("total_per_gpu_bytes") && planned["total_per_gpu_bytes"].is_number_unsigned()) {
        result.summary = "Planned " + formatBytes(planned["total_per_gpu_bytes"].get<uint64_t>()) + " per GPU";
        if (planned.contains("fits") && planned["fits"].is_boolean())
            result.summary += planned["fits"].get<bool>() ? "; it fits the card" : "; it does not fit the card";
        if (planned.contains("max_micro_batch") && planned["max_micro_batch"].is_number())
            result.summary += "; largest micro-batch that fits: " + planned["max_micro_batch"].dump();
        result.summary += ".";
    } else {
        result.summary = "Planned (see \"plan\").";
    }
    return result;
}

// Output schemas: the contract's keys (product.md §5) with their types, more keys allowed
// (the contract adds keys, never renames).
constexpr const char* diagnoseOutput = R"json({
  "type": "object",
  "properties": {
    "tool": {"type": "string"},
    "version": {"type": "string"},
    "inputs": {"type": "array", "items": {"type": "object",
        "properties": {"path": {"type": "string"}, "kind": {"type": "string"}, "error": {"type": ["string", "null"]}},
        "required": ["path", "kind", "error"]}},
    "oom_messages": {"type": "array", "items": {"type": "object"}},
    "memory_summaries": {"type": "array", "items": {"type": "object"}},
    "snapshots": {"type": "array", "items": {"type": "object",
        "properties": {"devices": {"type": "array", "items": {"type": "integer"}},
            "peak_allocated_bytes": {"type": ["integer", "null"]},
            "categories_at_peak": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}}}}},
    "diagnoses": {"type": "array", "items": {"type": "object",
        "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "confidence": {"type": "number"},
            "evidence": {"type": "array", "items": {"type": "string"}},
            "fixes": {"type": "array", "items": {"type": "object",
                "properties": {"title": {"type": "string"}, "detail": {"type": "string"}, "snippet": {"type": "string"},
                    "projected_saving_bytes": {"type": ["integer", "null"]}, "changes_experiment": {"type": "boolean"}},
                "required": ["title", "detail", "snippet", "projected_saving_bytes", "changes_experiment"]}}},
        "required": ["id", "title", "confidence", "evidence", "fixes"]}},
    "job": {"type": "object"}
  },
  "required": ["tool", "version", "inputs", "oom_messages", "memory_summaries", "snapshots", "diagnoses"]
})json";

constexpr const char* reportOutput = R"json({
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The report, as an absolute path."},
    "bytes": {"type": "integer"},
    "diagnoses": {"type": "integer"},
    "top_diagnosis": {"type": ["string", "null"]}
  },
  "required": ["path", "bytes", "diagnoses", "top_diagnosis"]
})json";

constexpr const char* compareInput = R"json({
  "type": "object",
  "properties": {
    "a": {"type": "string", "description": "The first snapshot (before a fix), or the run whose windows are compared."},
    "b": {"type": "string", "description": "The second snapshot (after the fix)."},
    "windows": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2,
        "description": "Two step windows of \"a\" instead of \"b\": STEP or FIRST:LAST, e.g. [\"2:2\", \"3:3\"]."},
    "device": {"type": "integer", "minimum": 0}
  },
  "required": ["a"],
  "additionalProperties": false
})json";

constexpr const char* compareOutput = R"json({
  "type": "object",
  "properties": {
    "tool": {"type": "string"},
    "compare": {"type": "object",
      "properties": {
        "a": {"type": "object", "properties": {"peak_allocated_bytes": {"type": "integer"},
            "categories_at_peak": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["peak_allocated_bytes", "categories_at_peak"]},
        "b": {"type": "object", "properties": {"peak_allocated_bytes": {"type": "integer"},
            "categories_at_peak": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["peak_allocated_bytes", "categories_at_peak"]},
        "categories_delta": {"type": "object", "additionalProperties": {"type": "integer"}},
        "sites": {"type": "array", "items": {"type": "object",
            "properties": {"stack": {"type": "array", "items": {"type": "string"}}, "category": {"type": "string"},
                "a_bytes": {"type": "integer"}, "b_bytes": {"type": "integer"}, "delta_bytes": {"type": "integer"}},
            "required": ["stack", "category", "a_bytes", "b_bytes", "delta_bytes"]}},
        "summary": {"type": "string"}
      },
      "required": ["a", "b", "categories_delta", "sites", "summary"]}
  },
  "required": ["tool", "compare"]
})json";

constexpr const char* planInput = R"json({
  "type": "object",
  "description": "The flags of `oomlens plan`, '_' for '-'. A model is needed: \"model\" or \"params\".",
  "properties": {
    "model": {"type": "string", "description": "A Hugging Face config.json path, or a preset: gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b, llama-2-13b, llama-2-70b, llama-65b, mistral-7b."},
    "params": {"type": "number", "description": "Parameter count, e.g. 1.3e9."},
    "layers": {"type": "integer"}, "hidden": {"type": "integer"}, "heads": {"type": "integer"},
    "kv_heads": {"type": "integer"}, "vocab": {"type": "integer"}, "ffn": {"type": "integer"},
    "batch": {"type": "integer", "description": "Micro-batch per GPU (default 1)."},
    "seq": {"type": "integer", "description": "Sequence length (default 1024)."},
    "precision": {"type": "string", "enum": ["fp32", "mixed-fp16", "mixed-bf16", "bf16"]},
    "optimizer": {"type": "string", "enum": ["adamw", "adamw-fused", "adamw-8bit", "adamw-paged-8bit", "sgd", "adafactor"]},
    "accumulation": {"type": "integer"},
    "checkpointing": {"type": "string", "description": "none, full or every:K."},
    "attention": {"type": "string", "enum": ["eager", "sdpa"]},
    "gpus": {"type": "integer", "description": "GPUs per node."}, "nodes": {"type": "integer"},
    "zero": {"type": "integer", "minimum": 0, "maximum": 3},
    "offload": {"type": "string", "enum": ["none", "optimizer", "all"]},
    "lora_rank": {"type": "integer"}, "qlora": {"type": "boolean"},
    "lora_targets": {"type": "string", "description": "all (default), attention or qv."},
    "experts": {"type": "integer", "description": "Routed experts (mixture of experts)."},
    "experts_per_token": {"type": "integer"}, "expert_ffn": {"type": "integer"}, "shared_experts": {"type": "integer"},
    "tp": {"type": "integer", "description": "Tensor-parallel degree."},
    "sequence_parallel": {"type": "boolean", "description": "With tp: Megatron's sequence parallelism."},
    "cp": {"type": "integer", "description": "Context-parallel degree."},
    "pp": {"type": "integer", "description": "Pipeline stages."}, "vpp": {"type": "integer"},
    "microbatches": {"type": "integer"}, "ep": {"type": "integer", "description": "Expert-parallel degree."},
    "distributed_optimizer": {"type": "boolean", "description": "Megatron's distributed optimizer."},
    "inference": {"type": "boolean", "description": "Plan serving: batch concurrent sequences of seq tokens, the KV cache, vLLM's budget."},
    "kv_dtype": {"type": "string"}, "weight_dtype": {"type": "string"},
    "gpu_memory_utilization": {"type": "number", "description": "With inference: vLLM's share of the card (0.9)."},
    "card": {"type": "string", "description": "16GB ... 141GB, a100-40gb, h100, 4090, ... or a size in bytes (\"85899345920\")."},
    "snapshot": {"type": "string", "description": "A snapshot of a run of this set-up: calibrate by measurement."},
    "device": {"type": "integer", "minimum": 0}
  },
  "additionalProperties": false
})json";

constexpr const char* planOutput = R"json({
  "type": "object",
  "properties": {
    "tool": {"type": "string"},
    "plan": {"type": "object",
      "properties": {
        "per_gpu_bytes": {"type": "object", "additionalProperties": {"type": "integer"}},
        "total_per_gpu_bytes": {"type": "integer"},
        "host_bytes": {"type": "integer"},
        "peak_phase": {"type": "string"},
        "fits": {"type": ["boolean", "null"]},
        "max_micro_batch": {"type": ["integer", "null"]},
        "calibration": {"type": ["object", "null"]},
        "ds_config": {"type": "object"}
      },
      "required": ["per_gpu_bytes", "total_per_gpu_bytes", "host_bytes", "peak_phase", "fits", "max_micro_batch",
          "calibration", "ds_config"]}
  },
  "required": ["tool", "plan"]
})json";

} // namespace

std::vector<Tool> caseTools()
{
    return {
        Tool { "diagnose", "Diagnose an out-of-memory failure",
            "Reads snapshots, OOM messages, tracebacks, logs and memory_summary() text as one case and answers "
            "what filled the GPU and why it failed: the `oomlens diagnose --json` object (inputs, oom_messages, "
            "memory_summaries, snapshots with the peak and categories, diagnoses most likely first with evidence "
            "and fixes, and for several rank files the job). Call it first.",
            caseInputSchema(), schema(diagnoseOutput), diagnose },
        Tool { "report", "Write the HTML report",
            "Writes the case's self-contained HTML report (what `oomlens report -o` writes) to \"output\" and "
            "answers its path and size.",
            caseInputSchema(
                R"json(, "output": {"type": "string", "description": "Where to write the report (.html)."})json",
                R"json("output")json"),
            schema(reportOutput), report, true },
        Tool { "compare", "Compare two snapshots or two step windows",
            "Compares two snapshots (before and after a fix) or two step windows of one: the peaks, categories at "
            "the peak, and the allocation sites that grew or shrank, matched by stack, category and phase; the "
            "`oomlens compare --json` object.",
            schema(compareInput), schema(compareOutput), compare },
        Tool { "plan", "Plan a training run's GPU memory",
            "Plans a run's GPU memory before launching it (the `oomlens plan --json` object): bytes per GPU by "
            "band, the peak phase, host memory, whether it fits the card, the largest micro-batch that fits, the "
            "fix ladder and a ds_config.json; with tp/pp/cp/ep Megatron's layout per pipeline stage, with "
            "inference the serving plan (KV cache, vLLM's budget). Give \"snapshot\" to calibrate the formula by a "
            "measured run.",
            schema(planInput), schema(planOutput), plan },
    };
}

} // namespace oomlens::mcp
