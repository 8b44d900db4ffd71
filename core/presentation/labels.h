#pragma once

#include "core/phase.h"

#include <string>
#include <string_view>

namespace oomlens {

// The names a person reads, shared by the app and the HTML report: "Optimizer state" where
// categoryName() gives the JSON key "optimizer_state", "Optimizer step" for Phase::Optimizer.
std::string_view categoryLabel(Category category);
std::string_view phaseLabel(Phase phase);

// The phase's label inside a sentence, as the app writes it: "failed in optimizer step".
std::string phaseInSentence(Phase phase);

} // namespace oomlens
