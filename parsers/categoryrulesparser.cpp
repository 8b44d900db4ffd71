#include "parsers/categoryrulesparser.h"
#include "core/strings.h"

#include <nlohmann/json.hpp>

namespace oomlens {

namespace {

std::string_view unquote(std::string_view s)
{
    s = trimmed(s);
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        return s.substr(1, s.size() - 2);
    return s;
}

// Splits "[a, 'b, c', d]" at commas outside quotes.
std::vector<std::string_view> splitFlowList(std::string_view inner)
{
    std::vector<std::string_view> items;
    char quote = 0;
    size_t start = 0;
    for (size_t i = 0; i <= inner.size(); ++i) {
        const char c = i < inner.size() ? inner[i] : ',';
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == ',') {
            const auto item = unquote(inner.substr(start, i - start));
            if (!item.empty())
                items.push_back(item);
            start = i + 1;
        }
    }
    return items;
}

// A rule for the category named `name` ("optimizer_state"); false with the reason otherwise.
bool addRule(CategoryRules& rules, std::string_view name, std::string_view pattern, std::string* error)
{
    const Category category = categoryFromName(name);
    if (category == Category::Unknown && name != "unknown") {
        *error = "unknown category '" + std::string(name)
            + "' (expected parameters, gradients, optimizer_state, activations, temporaries, inputs, "
              "communication, kv_cache or unknown)";
        return false;
    }
    return rules.add(category, pattern, error);
}

} // namespace

std::optional<CategoryRules> parseCategoryRules(std::string_view text, std::string* error)
{
    std::string ignored;
    if (!error)
        error = &ignored;
    CategoryRules rules;
    const auto firstChar = text.find_first_not_of(" \t\r\n");
    if (firstChar != std::string_view::npos && text[firstChar] == '{') {
        const auto json = nlohmann::json::parse(text, nullptr, false);
        if (json.is_discarded() || !json.is_object()) {
            *error = "category rules: not valid JSON";
            return std::nullopt;
        }
        for (const auto& [key, value] : json.items()) {
            if (value.is_string()) {
                if (!addRule(rules, key, value.get<std::string>(), error))
                    return std::nullopt;
            } else if (value.is_array()) {
                for (const auto& item : value) {
                    if (!item.is_string()) {
                        *error = "category rules: '" + key + "' must list strings";
                        return std::nullopt;
                    }
                    if (!addRule(rules, key, item.get<std::string>(), error))
                        return std::nullopt;
                }
            } else {
                *error = "category rules: '" + key + "' must be a regex or a list of regexes";
                return std::nullopt;
            }
        }
        return rules;
    }

    std::string currentKey;
    int lineNumber = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        const auto end = std::min(text.find('\n', pos), text.size());
        const std::string_view raw = text.substr(pos, end - pos);
        pos = end + 1;
        ++lineNumber;
        const std::string_view line = trimmed(raw);
        if (line.empty() || line.front() == '#' || line == "---")
            continue;
        const auto where = " (line " + std::to_string(lineNumber) + ")";
        if (line.front() == '-') {
            if (currentKey.empty()) {
                *error = "category rules: list item without a category" + where;
                return std::nullopt;
            }
            if (!addRule(rules, currentKey, unquote(line.substr(1)), error))
                return std::nullopt;
            continue;
        }
        const auto colon = line.find(':');
        if (colon == std::string_view::npos) {
            *error = "category rules: expected 'category: regex'" + where;
            return std::nullopt;
        }
        currentKey = std::string(unquote(line.substr(0, colon)));
        const std::string_view value = trimmed(line.substr(colon + 1));
        if (value.empty())
            continue; // a block list follows
        if (value.front() == '[') {
            if (value.back() != ']') {
                *error = "category rules: unterminated list" + where;
                return std::nullopt;
            }
            for (auto item : splitFlowList(value.substr(1, value.size() - 2))) {
                if (!addRule(rules, currentKey, item, error))
                    return std::nullopt;
            }
        } else if (!addRule(rules, currentKey, unquote(value), error)) {
            return std::nullopt;
        }
    }
    return rules;
}

} // namespace oomlens
