#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens diagnose [--full | --json] [--device N] [--rules FILE] INPUT...`; `arguments` excludes the
// program name and the command.
int runDiagnose(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
