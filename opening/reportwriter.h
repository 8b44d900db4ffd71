#pragma once

// The one writer of the HTML report: what to render (a case, its analysis and the sections a
// front end adds) assembled, stamped and saved, for `oomlens report`, `compare --report`,
// `plan --report`, the MCP server's report tool and the app's File ▸ Export report alike.

#include "core/report/htmlreport.h"

#include <cstddef>
#include <string>

namespace oomlens {

// Whether the report says when it was made: the commands stamp theirs; the app's export, like a
// file saved from an editor, leaves it out.
enum class ReportStamp { Now, None };

struct WrittenReport
{
    std::string given; // where it was to go, as the caller named it
    std::string path; // where it went: the file's absolute path, or "-"
    std::string error; // empty when written: why not ("Permission denied")
    size_t bytes = 0; // the report's size
    bool ok() const { return error.empty(); }
    // A failure as the command line prints it and an agent reads it: "oomlens: cannot write
    // PATH: why", PATH as given.
    std::string errorLine() const { return "oomlens: cannot write " + given + ": " + error; }
};

// Writes the report of `input` to `path`, '-' for standard output. A failed write never leaves
// half a report where the old one was (opening/atomicfile.h).
WrittenReport writeReport(const Case& input, const CaseAnalysis& analysis, report::ReportOptions options,
    const std::string& path, ReportStamp stamp = ReportStamp::Now);

} // namespace oomlens
