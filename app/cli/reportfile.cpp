#include "app/cli/reportfile.h"

#include "app/cli/atomicfile.h"
#include "app/cli/errorlines.h"

#include <cstdio>

namespace oomlens::cli {

bool writeReportFile(const std::string& path, const std::string& html)
{
    if (path == "-") {
        std::fwrite(html.data(), 1, html.size(), stdout);
        std::fflush(stdout);
        return true;
    }
    std::string error;
    if (!writeFileAtomically(path, html, error)) {
        printErrorLine("oomlens: cannot write " + path + ": " + error);
        return false;
    }
    return true;
}

} // namespace oomlens::cli
