#pragma once

#include "core/analysis/categoryrules.h"
#include "core/analysis/snapshotanalysis.h"

#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// User category rules, the format Meta's Mosaic uses: `{category: regex}` or
// `{category: [regex, ...]}` as JSON, or the same as simple YAML (`category: regex`,
// `category: [a, b]`, or a `- regex` list under `category:`). Rules keep the file's order.
// nullopt with a one-line error on bad syntax, an unknown category or an invalid regex.
std::optional<CategoryRules> parseCategoryRules(std::string_view text, std::string* error);
std::optional<CategoryRules> readCategoryRules(const std::string& path, std::string* error);

// `--rules FILE` and the Settings rules file: reads and parses `path` into options.rules, or
// says in options.rulesError why they cannot be applied. An empty path means no user rules.
void setCategoryRules(AnalysisOptions& options, const std::string& path);

} // namespace oomlens
