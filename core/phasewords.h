#pragma once

#include "core/phase.h"

#include <string>
#include <string_view>

namespace oomlens {

// The phase as a person reads it, shared by the diagnoses' sentences, the app and the report:
// "Optimizer step" where phaseName() gives the JSON's "optimizer".
std::string_view phaseLabel(Phase phase);

// The phase's label inside a sentence: "failed in optimizer step".
std::string phaseInSentence(Phase phase);

} // namespace oomlens
