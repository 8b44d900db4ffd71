#pragma once

// What a memory plan is asked for, whoever asks: `oomlens plan` fills a PlanRequest from its
// flags, the MCP server's plan tool from its JSON arguments; one reading checks it and plans,
// and each surface words the problems with its own names for the settings ("--kv-heads" on the
// command line, "kv_heads" for an agent).

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/planner/planresult.h"
#include "opening/inputfailure.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// One setting of a plan. Its spelling (planFieldName) is the flag's without the dashes; the
// tool's argument is the same with '_' for '-'.
enum class PlanField {
    Model,
    Params,
    Layers,
    Hidden,
    Heads,
    KvHeads,
    Vocab,
    Ffn,
    Experts,
    ExpertsPerToken,
    ExpertFfn,
    SharedExperts,
    Batch,
    Seq,
    Precision,
    Optimizer,
    Accumulation,
    Checkpointing,
    Attention,
    Gpus,
    Nodes,
    Zero,
    Offload,
    LoraRank,
    Qlora,
    LoraTargets,
    Tp,
    SequenceParallel,
    Cp,
    Pp,
    Vpp,
    Microbatches,
    Ep,
    DistributedOptimizer,
    Inference,
    KvDtype,
    WeightDtype,
    GpuMemoryUtilization,
    Card,
    Snapshot,
    Device,
};

// Every field, in the order the command's help lists them.
const std::vector<PlanField>& planFields();
std::string_view planFieldName(PlanField field); // "kv-heads"
bool isPlanSwitch(PlanField field); // a setting that is on or off (--qlora), taking no value

struct PlanRequest
{
    std::map<PlanField, std::string> values; // each setting given, as typed ("1.3e9", "mixed-bf16")
    std::set<PlanField> switches; // the switches turned on

    bool has(PlanField field) const { return values.count(field) > 0; }
    std::string value(PlanField field) const; // empty when not given
};

// How a surface names a setting in its problems, and where its help is.
struct PlanWording
{
    std::function<std::string(PlanField)> name; // "--kv-heads", "\"kv_heads\""
    std::string help; // "see --help", "see the tool's input schema"
};

struct PlanReading
{
    // A request that makes no plan: one line in the surface's words ("--batch needs a number,
    // got 'x'"); the command line stops with status 2.
    std::optional<std::string> problem;
    // The model file or the snapshot that could not be read (the command line: status 1), and
    // warnings about the snapshot read (a broken capture sidecar) otherwise.
    std::vector<InputFailure> failures;
    planner::PlanResult result;
    Case input; // the snapshot, which a report shows beside the plan
    AnalysisOptions analysisOptions;

    bool planned() const { return !problem && failedInputs() == 0; }
    int failedInputs() const;
};

// The request checked, its model and snapshot read, and planned.
PlanReading readPlanRequest(const PlanRequest& request, const PlanWording& wording);

} // namespace oomlens
