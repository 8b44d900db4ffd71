#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/planner/planresult.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens plan`: the memory planner (product.md §5, Wave-2 commands). Returns 0 when planned
// (whether or not it fits), 1 when a model or snapshot file cannot be read, 2 for usage errors.
int runPlan(const std::vector<std::string>& arguments);

// The words after `oomlens plan` read into a plan request (opening/planrequest.h, which the MCP
// plan tool fills from its JSON) and planned, without printing the plan. A usage error or an
// unreadable model or snapshot prints its one line (app/cli/errorlines.h) and sets `stop`.
struct PlanRun
{
    std::optional<int> stop; // the exit status when the command ends here (error, --help)
    planner::PlanResult result;
    Case input; // the --snapshot, which a --report shows beside the plan
    AnalysisOptions analysisOptions;
    bool json = false; // --json
    std::string reportPath; // --report FILE, empty without
};
PlanRun readPlanRun(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
