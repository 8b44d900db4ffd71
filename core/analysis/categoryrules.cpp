#include "core/analysis/categoryrules.h"

namespace oomlens {

bool CategoryRules::add(Category category, std::string_view pattern, std::string* error)
{
    Rule rule;
    rule.category = category;
    rule.pattern = std::string(pattern);
    rule.regex = QRegularExpression(QString::fromUtf8(pattern.data(), static_cast<qsizetype>(pattern.size())));
    if (!rule.regex.isValid()) {
        if (error)
            *error = "invalid regular expression '" + rule.pattern + "': " + rule.regex.errorString().toStdString();
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
    const QString qname = QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
    const QString qfile = QString::fromUtf8(file.data(), static_cast<qsizetype>(file.size()));
    int found = -1;
    for (size_t i = 0; i < m_rules.size() && found < 0; ++i) {
        if (m_rules[i].regex.match(qname).hasMatch() || m_rules[i].regex.match(qfile).hasMatch())
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
