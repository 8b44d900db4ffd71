#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <memory>
#include <string>

namespace oomlens {

// A case opened and analyzed: its inputs, their analysis and its title, immutable once built. The
// app's views hold it as a whole (adding inputs to a case produces a new AnalyzedCase; views swap
// to it); the CLI reads it once; the MCP server moves it into the case its cache keeps
// (app/mcp/casecache.h's CachedCase).
struct AnalyzedCase
{
    Case input;
    CaseAnalysis analysis;
    std::string title;
};

using AnalyzedCasePtr = std::shared_ptr<const AnalyzedCase>;

} // namespace oomlens
