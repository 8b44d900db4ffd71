#pragma once

// The command line's side of opening its INPUTs (opening/opening.h does the rest): each input that
// cannot be read printed as one line on stderr.

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "opening/opening.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens::cli {

// Prints each failure as the command line words it (opening/inputfailure.h's failureLine:
// "oomlens: PATH: reason"); returns how many inputs failed (a broken capture sidecar is only a warning: the snapshot
// beside it was still read).
int printFailures(const std::vector<InputFailure>& failures);

// The INPUTs opened as the user means them, each folder standing for what it holds and '-' read
// from standard input (opening/inputrequests.h): the ranks of one job with the text given beside them, or
// one case (opening/opening.h's openInputs). Each input that cannot be read gets its line on
// stderr; the others are still analyzed.
Opened openCommandLine(const std::vector<std::string>& given, const AnalysisOptions& options);

// Reads every INPUT into one case without analyzing it, each failure on stderr: `compare` and
// `plan --snapshot` analyze the one snapshot they need. Returns the number of inputs that failed.
int loadInputs(const std::vector<std::string>& paths, Case& into);

// One INPUT that must be a snapshot (`compare`, `plan --snapshot`), read and analyzed for
// options.device; on failure its line is on stderr and `status` is the exit status.
struct LoadedSnapshot
{
    Case input;
    std::optional<SnapshotAnalysis> analysis;
    int status = 0;
};
LoadedSnapshot loadSnapshotInput(const std::string& path, const AnalysisOptions& options);

// What `diagnose` and `report` say of their INPUT arguments in --help.
std::string caseInputsHelp();

} // namespace oomlens::cli
