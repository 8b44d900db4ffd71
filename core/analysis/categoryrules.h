#pragma once

#include "core/phase.h"
#include "core/snapshot.h"

#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// User category rules: regexes over a stack's frames, each naming the category of what it
// allocates. A rule matches a stack when its regex matches any frame's function name or
// filename. Earlier rules win over later ones, and user rules win over the built-in evidence.
// Patterns are ECMAScript regular expressions (what Python's `re` writes for the patterns such
// rules hold: classes, groups, alternatives, anchors), searched anywhere in the name.
// Read from the user's JSON or YAML by parsers/categoryrulesparser.h.
class CategoryRules
{
public:
    struct Rule
    {
        Category category = Category::Unknown;
        std::string pattern;
        std::regex regex;
    };

    // Appends a rule; false with a one-line error when `pattern` is not a valid regex.
    bool add(Category category, std::string_view pattern, std::string* error);

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
    int frameRule(const Snapshot& snapshot, FrameId frame);

    std::vector<Rule> m_rules;
    std::vector<int> m_frameRule; // per frame: rule index + 2, 0 = not computed, 1 = none
};

} // namespace oomlens
