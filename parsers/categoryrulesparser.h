#pragma once

#include "core/analysis/categoryrules.h"

#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// User category rules, the format Meta's Mosaic uses: `{category: regex}` or
// `{category: [regex, ...]}` as JSON, or the same as simple YAML (`category: regex`,
// `category: [a, b]`, or a `- regex` list under `category:`). Rules keep the file's order.
// nullopt with a one-line error on bad syntax, an unknown category or an invalid regex.
// A file of them is read by opening/categoryrulesfile.h.
std::optional<CategoryRules> parseCategoryRules(std::string_view text, std::string* error);

} // namespace oomlens
