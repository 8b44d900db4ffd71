#pragma once

#include "core/phase.h"

#include <string_view>

namespace oomlens {

// The names a person reads, shared by the app and the HTML report: "Optimizer state" where
// categoryName() gives the JSON key "optimizer_state", "Optimizer step" for Phase::Optimizer.
std::string_view categoryLabel(Category category);
std::string_view phaseLabel(Phase phase);

} // namespace oomlens
