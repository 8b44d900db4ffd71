#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens report INPUT... -o report.html [--device N]`: `arguments` are those after the word
// "report". Writes the self-contained HTML report ('-o -' writes it to stdout). Returns 0 when
// every input was read, 1 when some input could not be read (the report still covers the
// others) or the report could not be written, 2 on a usage error.
int runReport(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
