#pragma once

#include "core/phase.h"
#include "core/snapshot.h"

#include <QRegularExpression>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// User category rules, the format Meta's Mosaic uses: `{category: regex}` or
// `{category: [regex, ...]}` as JSON, or the same as simple YAML (`category: regex`,
// `category: [a, b]`, or a `- regex` list under `category:`). A rule matches a stack when its
// regex matches any frame's function name or filename. Earlier rules win over later ones, and
// user rules win over the built-in evidence.
class CategoryRules
{
public:
    struct Rule
    {
        Category category = Category::Unknown;
        std::string pattern;
        QRegularExpression regex;
    };

    // nullopt with a one-line error on bad syntax, an unknown category or an invalid regex.
    static std::optional<CategoryRules> parse(std::string_view text, std::string* error);
    static std::optional<CategoryRules> load(const std::string& path, std::string* error);

    const std::vector<Rule>& rules() const { return m_rules; }
    bool empty() const { return m_rules.empty(); }

    struct Match
    {
        int rule = -1;
        FrameId frame;
    };
    // The first rule matching any frame of the stack; rule -1 when none. Cached per frame.
    Match match(const Snapshot& snapshot, StackId stack);

private:
    bool add(std::string_view category, std::string_view pattern, std::string* error);
    int frameRule(const Snapshot& snapshot, FrameId frame);

    std::vector<Rule> m_rules;
    std::vector<int> m_frameRule; // per frame: rule index + 2, 0 = not computed, 1 = none
};

} // namespace oomlens
