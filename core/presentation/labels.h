#pragma once

#include "core/case.h"
#include "core/phase.h"
#include "core/phasewords.h"

#include <string>
#include <string_view>

namespace oomlens {

// The names a person reads, shared by the app and the HTML report: "Optimizer state" where
// categoryName() gives the JSON key "optimizer_state" (the phases' are in core/phasewords.h).
std::string_view categoryLabel(Category category);
// Whether legends and tables list the category when it holds nothing. The training categories
// are always listed (a forward-only run's "Gradients: 0" is an answer); communication and
// kv_cache exist only in distributed or serving runs and are listed where they hold memory.
bool listedWhenEmpty(Category category);

// What an input was recognized as: "Memory snapshot" where inputKindName() gives the JSON's
// "snapshot", "OOM message" for "oom_message".
std::string_view inputKindLabel(InputKind kind);

} // namespace oomlens
