#include "app/cli/commandline.h"

#include "app/cli/errorlines.h"
#include "core/characters.h"
#include "core/numbertext.h"
#include "opening/categoryrulesfile.h"

#include <cstdio>

namespace oomlens::cli {

std::string parseError(const OptionParser& parser)
{
    const std::vector<std::string>& unknown = parser.unknownOptionNames();
    if (unknown.empty())
        return parser.errorText();
    const std::string& name = unknown.front();
    return "unknown option " + std::string(characters(name).size() == 1 ? "-" : "--") + name;
}

CommandLine::CommandLine(const char* synopsis, std::string description)
    : m_synopsis(synopsis)
    , m_command(m_synopsis.substr(0, m_synopsis.find(' ')))
{
    m_parser.setDescription(std::move(description));
    m_parser.addHelpOption();
}

std::optional<int> CommandLine::parse(const std::vector<std::string>& arguments)
{
    if (!m_parser.parse(arguments))
        return usageError(parseError(m_parser));
    // --help-all too: the parser's own option beside --help (a command has no others to show).
    if (m_parser.isSet("help") || m_parser.isSet("help-all")) {
        std::fputs(helpText().c_str(), stdout);
        return 0;
    }
    return std::nullopt;
}

int CommandLine::usageError(const std::string& message) const
{
    printErrorLine("oomlens " + m_command + ": " + message);
    std::fprintf(stderr, "usage: oomlens %s\n", m_synopsis.c_str());
    return 2;
}

bool CommandLine::readDevice(const Option& option, std::optional<int32_t>& device) const
{
    if (!m_parser.isSet(option))
        return true;
    const std::string value = m_parser.value(option);
    const std::optional<int> ordinal = intFromText(value);
    if (!ordinal || *ordinal < 0) {
        usageError("--device needs a device ordinal (0, 1, ...), got '" + value + "'");
        return false;
    }
    device = *ordinal;
    return true;
}

std::optional<int> CommandLine::readRules(const Option& option, AnalysisOptions& options) const
{
    if (!m_parser.isSet(option))
        return std::nullopt;
    const std::string path = m_parser.value(option);
    if (path.empty())
        return usageError("--rules needs a file");
    setCategoryRules(options, path);
    if (!options.rulesError.empty()) {
        printErrorLine("oomlens " + m_command + ": " + options.rulesError);
        return 1;
    }
    return std::nullopt;
}

std::string CommandLine::helpText() const
{
    // The parser's first line puts "[options]" first; the synopsis says how the command is
    // really typed.
    const std::string text = m_parser.helpText("oomlens " + m_command);
    return "Usage: oomlens " + m_synopsis + text.substr(text.find('\n'));
}

} // namespace oomlens::cli
