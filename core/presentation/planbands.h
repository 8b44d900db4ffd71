#pragma once

#include "core/phase.h"
#include "core/planner/memoryplan.h"

#include <optional>
#include <string_view>

namespace oomlens {

// The planner's bands are the timeline's categories plus what no tensor accounts for, so a band
// takes its category's colour and name and the overhead its own: the What-if tab and the
// report's plan read alike.
std::optional<Category> bandCategory(planner::Band band);
std::string_view bandLabel(planner::Band band);

} // namespace oomlens
