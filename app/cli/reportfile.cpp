#include "app/cli/reportfile.h"

#include "app/cli/errorlines.h"
#include "opening/reportwriter.h"

namespace oomlens::cli {

bool writeReportFile(
    const std::string& path, const Case& input, const CaseAnalysis& analysis, const report::ReportOptions& options)
{
    const WrittenReport written = writeReport(input, analysis, options, path);
    if (!written.ok())
        printErrorLine(written.errorLine());
    return written.ok();
}

} // namespace oomlens::cli
