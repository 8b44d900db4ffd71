#include "core/analysis/categoryrules.h"

namespace oomlens {

namespace {

// libstdc++ searches by backtracking, one stack frame per character, unless told to run the
// automaton breadth first: a long frame name (a C++ template's) would then exhaust the stack.
// Breadth first has no back-references, which category patterns have no use for.
#if defined(__GLIBCXX__)
constexpr auto syntax = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
constexpr auto syntax = std::regex::ECMAScript;
#endif

// Longer is not a category pattern but a file given by mistake; its compilation recurses per group.
constexpr size_t maxPatternBytes = 4096;

} // namespace

bool CategoryRules::add(Category category, std::string_view pattern, std::string* error)
{
    Rule rule;
    rule.category = category;
    rule.pattern = std::string(pattern);
    std::string reason;
    if (pattern.size() > maxPatternBytes) {
        reason = "longer than " + std::to_string(maxPatternBytes) + " bytes";
    } else {
        try {
            rule.regex = std::regex(rule.pattern, syntax);
        } catch (const std::regex_error& e) {
            reason = e.what();
        }
    }
    if (!reason.empty()) {
        if (error)
            *error = "invalid regular expression '" + rule.pattern + "': " + reason;
        return false;
    }
    m_rules.push_back(std::move(rule));
    return true;
}

int CategoryRules::frameRule(const Snapshot& snapshot, FrameId frame)
{
    if (m_frameRule.size() < snapshot.frames->frameCount())
        m_frameRule.resize(snapshot.frames->frameCount(), 0);
    int& cached = m_frameRule[frame.value];
    if (cached != 0)
        return cached - 2;
    const Frame& f = snapshot.frames->frame(frame);
    const auto name = snapshot.strings->get(f.name);
    const auto file = snapshot.strings->get(f.filename);
    const auto matches = [](const std::regex& regex, std::string_view text) {
        return std::regex_search(text.begin(), text.end(), regex);
    };
    int found = -1;
    for (size_t i = 0; i < m_rules.size() && found < 0; ++i) {
        if (matches(m_rules[i].regex, name) || matches(m_rules[i].regex, file))
            found = static_cast<int>(i);
    }
    cached = found + 2;
    return found;
}

CategoryRules::Match CategoryRules::match(const Snapshot& snapshot, StackId stack)
{
    Match best;
    if (m_rules.empty() || !snapshot.frames)
        return best;
    for (FrameId frame : snapshot.frames->stack(stack)) {
        const int rule = frameRule(snapshot, frame);
        if (rule >= 0 && (best.rule < 0 || rule < best.rule)) {
            best.rule = rule;
            best.frame = frame;
        }
    }
    return best;
}

} // namespace oomlens
