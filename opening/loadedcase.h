#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <memory>
#include <string>

namespace oomlens {

// One opened case: the inputs and their analysis, immutable once built. The app's views hold it
// as a whole (adding inputs to a case produces a new LoadedCase; views swap to it), the CLI and
// the MCP server read it once.
struct LoadedCase
{
    Case input;
    CaseAnalysis analysis;
    std::string title;
};

using LoadedCasePtr = std::shared_ptr<const LoadedCase>;

} // namespace oomlens
