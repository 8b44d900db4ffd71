#pragma once

// The command line's side of opening its INPUTs (opening/opening.h does the rest): '-' read from
// standard input, and each input that cannot be read printed as one line on stderr.

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "opening/opening.h"

#include <QStringList>

#include <optional>
#include <vector>

namespace oomlens::cli {

// The INPUTs as requests: '-' is standard input, read here (as text named "-").
std::vector<LoadRequest> inputRequests(const QStringList& paths);

// Prints each failure as "oomlens: PATH: reason" (printErrorLine); returns how many inputs
// failed (a broken capture sidecar is only a warning: the snapshot beside it was still read).
int printFailures(const std::vector<InputFailure>& failures);

// The INPUTs opened as the user means them, each folder standing for what it holds
// (opening/jobfiles.h's expandFolders): the ranks of one job with the text given beside them, or
// one case (opening/opening.h's openInputs). Each input that cannot be read gets its line on
// stderr; the others are still analyzed.
Opened openCommandLine(const QStringList& given, const AnalysisOptions& options);

// Reads every INPUT into one case without analyzing it, each failure on stderr: `compare` and
// `plan --snapshot` analyze the one snapshot they need. Returns the number of inputs that failed.
int loadInputs(const QStringList& paths, Case& into);

// One INPUT that must be a snapshot (`compare`, `plan --snapshot`), read and analyzed for
// options.device; on failure its line is on stderr and `status` is the exit status.
struct LoadedSnapshot
{
    Case input;
    std::optional<SnapshotAnalysis> analysis;
    int status = 0;
};
LoadedSnapshot loadSnapshotInput(const QString& path, const AnalysisOptions& options);

// What `diagnose` and `report` say of their INPUT arguments in --help.
QString caseInputsHelp();

// The lines `compare` and `plan --snapshot` print when an input that must be a snapshot is not
// one, or lacks the device asked for (`oomlens mcp` returns the same lines).
QString notASnapshotError(const QString& path);
QString noSuchDeviceError(const QString& path);

} // namespace oomlens::cli
