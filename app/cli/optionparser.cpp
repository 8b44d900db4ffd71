#include "app/cli/optionparser.h"

#include "core/characters.h"

#include <algorithm>
#include <cstddef>

namespace oomlens::cli {

namespace {

// One option's or argument's lines in the help: the names in a column `nameWidth` wide (wrapped
// when longer), the description beside them wrapped to 79 columns at white space (or anywhere
// when a word is longer than the line). Column for column QCommandLineParser's layout, including
// its habit of not counting the first character of a continued line.
std::string wrapText(std::string_view names, ptrdiff_t nameWidth, std::string_view description)
{
    const std::vector<std::string_view> name = characters(names);
    size_t nameIndex = 0;
    const auto nextNameSection = [&] {
        std::string section;
        for (ptrdiff_t taken = 0; taken < nameWidth && nameIndex < name.size(); ++taken)
            section += name[nameIndex++];
        return section;
    };
    const auto justified = [nameWidth](std::string section) {
        const ptrdiff_t width = static_cast<ptrdiff_t>(characters(section).size());
        if (width < nameWidth)
            section.append(static_cast<size_t>(nameWidth - width), ' ');
        return section;
    };

    const std::vector<std::string_view> text = characters(description);
    const ptrdiff_t length = static_cast<ptrdiff_t>(text.size());
    const ptrdiff_t max = 79 - (2 + nameWidth + 1);
    std::string wrapped;
    ptrdiff_t lineStart = 0;
    ptrdiff_t lastBreakable = -1;
    ptrdiff_t x = 0;
    for (ptrdiff_t i = 0; i < length; ++i) {
        ++x;
        const std::string_view c = text[static_cast<size_t>(i)];
        if (isSpaceCharacter(c))
            lastBreakable = i;
        ptrdiff_t breakAt = -1;
        ptrdiff_t nextLineStart = -1;
        if (x > max && lastBreakable != -1) { // time to break, and where is known
            breakAt = lastBreakable;
            nextLineStart = lastBreakable + 1;
        } else if ((x > max - 1 && lastBreakable == -1) || i == length - 1) { // nowhere to break, or the end
            breakAt = i + 1;
            nextLineStart = breakAt;
        } else if (c == "\n") {
            breakAt = i;
            nextLineStart = i + 1;
        }
        if (breakAt == -1)
            continue;
        wrapped += "  " + justified(nextNameSection()) + ' ';
        for (ptrdiff_t k = lineStart; k < breakAt; ++k)
            wrapped += text[static_cast<size_t>(k)];
        wrapped += '\n';
        x = 0;
        lastBreakable = -1;
        lineStart = nextLineStart;
        if (lineStart < length && isSpaceCharacter(text[static_cast<size_t>(lineStart)]))
            ++lineStart; // a line never starts with a space
        i = lineStart;
    }
    while (nameIndex < name.size())
        wrapped += "  " + nextNameSection() + '\n';
    return wrapped;
}

// "-o, --output <FILE>" as the help lists an option.
std::string namesInHelp(const Option& option)
{
    std::string text;
    for (const std::string& name : option.names) {
        if (!text.empty())
            text += ", ";
        text += (characters(name).size() == 1 ? "-" : "--") + name;
    }
    if (option.takesValue())
        text += " <" + option.valueName + '>';
    return text;
}

} // namespace

Option::Option(const char* name, std::string description, std::string valueName)
    : names { name }
    , description(std::move(description))
    , valueName(std::move(valueName))
{ }

Option::Option(std::vector<std::string> names, std::string description, std::string valueName)
    : names(std::move(names))
    , description(std::move(description))
    , valueName(std::move(valueName))
{ }

void OptionParser::addHelpOption()
{
    // QCommandLineParser's wording for --help, which it has always printed. --help-all stays
    // accepted (scripts written against the Qt parser pass it) and prints the same: the command
    // line has no Qt options any more.
    addOption(Option({ "h", "help" }, "Displays help on commandline options."));
    addOption(Option("help-all", "Displays the same help as --help."));
}

void OptionParser::addVersionOption()
{
    addOption(Option({ "v", "version" }, "Displays version information."));
}

bool OptionParser::addOption(const Option& option)
{
    if (option.names.empty())
        return false;
    for (const std::string& name : option.names) {
        if (m_names.contains(name))
            return false;
    }
    m_options.push_back(option);
    for (const std::string& name : option.names)
        m_names[name] = m_options.size() - 1;
    return true;
}

void OptionParser::addOptions(std::initializer_list<Option> options)
{
    for (const Option& option : options)
        addOption(option);
}

void OptionParser::addPositionalArgument(std::string name, std::string description, std::string syntax)
{
    std::string shown = syntax.empty() ? name : std::move(syntax);
    m_positionalHelp.push_back({ std::move(name), std::move(description), std::move(shown) });
}

const Option* OptionParser::find(const std::string& name, size_t* index) const
{
    const auto found = m_names.find(name);
    if (found == m_names.end())
        return nullptr;
    if (index)
        *index = found->second;
    return &m_options[found->second];
}

bool OptionParser::registerFound(const std::string& name)
{
    if (m_names.contains(name)) {
        m_found.push_back(name);
        return true;
    }
    m_unknown.push_back(name);
    return false;
}

// The value of option `name`, found in `word`: after its '=', else the next word (even one that
// starts with '-'). A switch given a value is an error.
bool OptionParser::readValue(
    const std::string& name, const std::string& word, size_t& at, const std::vector<std::string>& words)
{
    size_t index = 0;
    const Option* option = find(name, &index);
    if (!option)
        return true;
    const size_t assign = word.find('=');
    if (!option->takesValue()) {
        if (assign == std::string::npos)
            return true;
        m_error = "Unexpected value after '" + word.substr(0, assign) + "'.";
        return false;
    }
    if (assign != std::string::npos) {
        m_values[index].push_back(word.substr(assign + 1));
        return true;
    }
    if (++at == words.size()) {
        m_error = "Missing value after '" + word + "'.";
        return false;
    }
    m_values[index].push_back(words[at]);
    return true;
}

// `-abc`: `-a -b -c`, until one of them takes a value: the rest of the word (after an '=') is it.
bool OptionParser::readCompactedShortOptions(const std::string& word, size_t& at, const std::vector<std::string>& words)
{
    const std::vector<std::string_view> letters = characters(word);
    bool error = false;
    bool valueFound = false;
    std::string name;
    for (size_t position = 1; position < letters.size(); ++position) {
        name = std::string(letters[position]);
        if (!registerFound(name)) {
            error = true;
            continue;
        }
        size_t index = 0;
        const bool takesValue = find(name, &index)->takesValue();
        const bool assignFollows = position + 1 < letters.size() && letters[position + 1] == "=";
        if (takesValue) {
            if (position + 1 < letters.size()) {
                const std::string_view rest = letters[assignFollows ? position + 1 : position];
                m_values[index].push_back(word.substr(static_cast<size_t>(rest.data() - word.data()) + rest.size()));
                valueFound = true;
            }
            break;
        }
        if (assignFollows)
            break;
    }
    if (!valueFound && !readValue(name, word, at, words))
        error = true;
    return !error;
}

bool OptionParser::parse(const std::vector<std::string>& words)
{
    m_values.clear();
    m_found.clear();
    m_positional.clear();
    m_unknown.clear();
    m_error.clear();
    bool error = false;
    bool onlyPositional = false; // after `--`
    for (size_t at = 0; at < words.size(); ++at) {
        const std::string& word = words[at];
        if (onlyPositional || word == "-" || !word.starts_with('-')) {
            m_positional.push_back(word);
        } else if (word == "--") {
            onlyPositional = true;
        } else if (word.starts_with("--")) {
            const std::string name = word.substr(2, word.find('=', 2) - 2);
            if (!registerFound(name) || !readValue(name, word, at, words))
                error = true;
        } else if (!readCompactedShortOptions(word, at, words)) {
            error = true;
        }
    }
    return !error;
}

bool OptionParser::isSet(const std::string& name) const
{
    const Option* option = find(name);
    return std::any_of(m_found.begin(), m_found.end(), [&](const std::string& found) {
        return found == name
            || (option && std::find(option->names.begin(), option->names.end(), found) != option->names.end());
    });
}

std::string OptionParser::value(const Option& option) const
{
    const std::vector<std::string> all = values(option);
    return all.empty() ? std::string() : all.back();
}

std::vector<std::string> OptionParser::values(const Option& option) const
{
    size_t index = 0;
    if (!find(option.names.front(), &index))
        return {};
    const auto found = m_values.find(index);
    return found == m_values.end() ? std::vector<std::string>() : found->second;
}

std::string OptionParser::errorText() const
{
    if (!m_error.empty())
        return m_error;
    if (m_unknown.size() == 1)
        return "Unknown option '" + m_unknown.front() + "'.";
    if (m_unknown.empty())
        return {};
    std::string names = m_unknown.front();
    for (size_t i = 1; i < m_unknown.size(); ++i)
        names += ", " + m_unknown[i];
    return "Unknown options: " + names + ".";
}

std::string OptionParser::helpText(const std::string& program) const
{
    std::string usage = program;
    if (!m_options.empty())
        usage += " [options]";
    for (const Positional& argument : m_positionalHelp)
        usage += ' ' + argument.syntax;
    std::string text = "Usage: " + usage + '\n';
    if (!m_description.empty())
        text += m_description + '\n';
    text += '\n';
    if (!m_options.empty())
        text += "Options:\n";
    std::vector<std::string> names;
    ptrdiff_t longest = 0;
    for (const Option& option : m_options) {
        if (option.hiddenFromHelp)
            continue;
        names.push_back(namesInHelp(option));
        longest = std::max(longest, static_cast<ptrdiff_t>(characters(names.back()).size()));
    }
    const ptrdiff_t nameWidth = std::min<ptrdiff_t>(50, longest + 1);
    auto name = names.begin();
    for (const Option& option : m_options) {
        if (!option.hiddenFromHelp)
            text += wrapText(*name++, nameWidth, option.description);
    }
    if (!m_positionalHelp.empty()) {
        if (!m_options.empty())
            text += '\n';
        text += "Arguments:\n";
        for (const Positional& argument : m_positionalHelp)
            text += wrapText(argument.name, nameWidth, argument.description);
    }
    return text;
}

} // namespace oomlens::cli
