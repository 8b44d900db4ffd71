#pragma once

#include "core/report/htmlreport.h"

#include <string>

namespace oomlens::cli {

// The report of `input` written to `path` ('-' for standard output) and stamped with the time, by
// opening/reportwriter.h's one writer; a failure says why on stderr. Returns false on failure.
// Every command that writes a report (`report`, `plan --report`, `compare --report`) uses it.
bool writeReportFile(
    const std::string& path, const Case& input, const CaseAnalysis& analysis, const report::ReportOptions& options);

} // namespace oomlens::cli
