#include "opening/categoryrulesfile.h"

#include "parsers/categoryrulesparser.h"
#include "parsers/inputfile.h"

namespace oomlens {

std::optional<CategoryRules> readCategoryRules(const std::string& path, std::string* error)
{
    // Rules are a few lines; a bound keeps a device or an endless pipe given as rules from hanging.
    constexpr uint64_t maxRulesBytes = uint64_t(16) << 20;
    std::string reason;
    const std::optional<std::string> bytes = readSmallFile(path, maxRulesBytes, &reason);
    if (!bytes) {
        if (error)
            *error = "cannot read category rules " + path + ": " + reason;
        return std::nullopt;
    }
    std::optional<CategoryRules> rules = parseCategoryRules(*bytes, &reason);
    if (!rules && error) {
        // Named by the file, as a read error is: "category rules FILE: unknown category 'x' ...".
        std::string_view what = reason;
        if (what.starts_with("category rules: "))
            what.remove_prefix(std::string_view("category rules: ").size());
        *error = "category rules " + path + ": " + std::string(what);
    }
    return rules;
}

void setCategoryRules(AnalysisOptions& options, const std::string& path)
{
    options.rules.reset();
    options.rulesError.clear();
    if (path.empty())
        return;
    if (auto rules = readCategoryRules(path, &options.rulesError))
        options.rules = std::make_shared<const CategoryRules>(std::move(*rules));
}

} // namespace oomlens
