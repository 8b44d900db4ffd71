#include "opening/reportwriter.h"

#include "opening/atomicfile.h"
#include "opening/timestamp.h"
#include "parsers/filepaths.h"

#include <cstdio>

namespace oomlens {

WrittenReport writeReport(const Case& input, const CaseAnalysis& analysis, report::ReportOptions options,
    const std::string& path, ReportStamp stamp)
{
    if (stamp == ReportStamp::Now)
        options.generatedAt = utcTimestampNow();
    const std::string html = report::buildHtmlReport(input, analysis, options);
    WrittenReport written;
    written.given = path;
    written.path = path == "-" ? path : absoluteFilePath(path);
    written.bytes = html.size();
    if (path == "-") {
        std::fwrite(html.data(), 1, html.size(), stdout);
        std::fflush(stdout);
    } else if (!writeFileAtomically(path, html, written.error) && written.error.empty()) {
        written.error = "cannot write the file";
    }
    return written;
}

} // namespace oomlens
