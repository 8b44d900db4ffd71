#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <cstddef>
#include <string>

namespace oomlens {
struct Comparison; // core/compare/comparison.h
struct JobSummary; // core/job/jobsummary.h
namespace planner {
struct PlanResult; // core/planner/planresult.h
}
} // namespace oomlens

namespace oomlens::report {

struct ReportOptions
{
    std::string title; // empty: derived from the case ("Out of memory: optimizer state ...")
    std::string generatedAt; // shown in the footer; empty leaves it out (reproducible output)
    size_t timelineBuckets = 1000;
    size_t topAllocations = 20;
    size_t maxStackFrames = 48;
    size_t maxSegments = 64;
    // Optional sections, each owned by the command that computed it: `oomlens compare` passes
    // its comparison, a job of rank files passes its summary (written first, before the failing
    // rank's diagnosis). Null leaves the section out.
    const Comparison* comparison = nullptr;
    const JobSummary* job = nullptr;
    // A memory plan or a what-if of the measured run (`oomlens plan --report`, the app's What-if
    // tab once the user changed the set-up).
    const planner::PlanResult* plan = nullptr;
};

// The whole report as one self-contained HTML document: inline CSS, inline SVG charts, no
// script, no outside resource (a Content-Security-Policy says so to the browser too), and
// every string from the inputs escaped. The CLI `report` command and the GUI's
// File ▸ Export report both call this, so they write the same file.
std::string buildHtmlReport(const Case& input, const CaseAnalysis& analysis, const ReportOptions& options = {});

} // namespace oomlens::report
