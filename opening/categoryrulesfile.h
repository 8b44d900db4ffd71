#pragma once

// The user's category rules file (`--rules FILE`, the app's Settings), read and parsed
// (parsers/categoryrulesparser.h) for every front end alike.

#include "core/analysis/categoryrules.h"
#include "core/analysis/snapshotanalysis.h"

#include <optional>
#include <string>

namespace oomlens {

// nullopt with one line saying why ("cannot read category rules FILE: ...", "category rules
// FILE: unknown category 'x'").
std::optional<CategoryRules> readCategoryRules(const std::string& path, std::string* error);

// Reads and parses `path` into options.rules, or says in options.rulesError why they cannot be
// applied. An empty path means no user rules.
void setCategoryRules(AnalysisOptions& options, const std::string& path);

} // namespace oomlens
