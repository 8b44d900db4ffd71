#pragma once

#include <string>

namespace oomlens::cli {

// Writes a finished HTML report to `path` ('-' for standard output). A failed write never leaves
// half a report where the old one was, and says why on stderr. Returns false on failure.
// Every command that writes a report (`report`, `plan --report`, `compare --report`) uses it.
bool writeReportFile(const std::string& path, const std::string& html);

} // namespace oomlens::cli
