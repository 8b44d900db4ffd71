#include "app/cli/cli.h"

#include "app/cli/commandline.h"
#include "app/cli/comparecommand.h"
#include "app/cli/diagnose.h"
#include "app/cli/mcpcommand.h"
#include "app/cli/plancommand.h"
#include "app/cli/report.h"
#include "app/cli/summarize.h"

#include <array>
#include <cstdio>
#include <cstring>

namespace oomlens::cli {

namespace {

// The one table of headless commands: a new command is one line here and its own file.
const std::array commandTable {
    Command { "diagnose", "diagnose [--full | --json] [--device N] [--rules FILE] INPUT...",
        "analyze and print; INPUT '-' reads stdin", runDiagnose },
    Command { "report", "report INPUT... -o report.html", "write the self-contained HTML report", runReport },
    Command { "plan", "plan (--model FILE|PRESET | --params N) [--card NAME] [--json] ...",
        "plan a run's GPU memory: bands per GPU, fit, ladder, ds_config.json", runPlan },
    Command { "summarize", "summarize INPUT... -o DIR [--shard I/N]",
        "one small summary per rank snapshot, to merge where you diagnose", runSummarize },
    Command { "compare", "compare A B [--json] | compare A --window STEP:STEP --window STEP:STEP",
        "compare two snapshots, or two step windows of one", runCompare },
    Command { "mcp", "mcp", "serve the tools to a coding agent (Model Context Protocol on stdio)", runMcp },
};

const Command* findCommand(const std::string& name)
{
    for (const Command& command : commandTable) {
        if (name == command.name)
            return &command;
    }
    return nullptr;
}

// Help and version are answered the same way with or without a GUI, before any window exists.
std::optional<int> answerHelpOrVersion(const OptionParser& parser, Gui gui)
{
    if (parser.isSet("help") || parser.isSet("help-all")) {
        std::fputs(usageText(gui).c_str(), stdout);
        return 0;
    }
    if (parser.isSet("version")) {
        std::printf("oomlens %s\n", OOMLENS_VERSION);
        return 0;
    }
    return std::nullopt;
}

int usageError(const std::string& message, Gui gui)
{
    std::fprintf(stderr, "oomlens: %s\n%s", message.c_str(), usageText(gui).c_str());
    return 2;
}

// The words after the program's name.
std::vector<std::string> afterProgram(const std::vector<std::string>& arguments)
{
    return arguments.empty() ? arguments : std::vector<std::string>(arguments.begin() + 1, arguments.end());
}

} // namespace

std::span<const Command> commands()
{
    return commandTable;
}

std::string usageText(Gui gui)
{
    // Synopses line up in one column; one too long for it puts its summary on the next line.
    constexpr size_t summaryColumn = 52;
    const auto line = [](const std::string& synopsis, const std::string& summary) {
        std::string text = "  " + synopsis;
        if (text.size() < summaryColumn)
            text.append(summaryColumn - text.size(), ' ');
        else
            text += '\n' + std::string(summaryColumn, ' ');
        return text + summary + '\n';
    };
    std::string text = "usage:\n";
    if (gui == Gui::Built)
        text += line("oomlens [FILE...]", "open the GUI, optionally with files");
    for (const Command& command : commandTable)
        text += line(std::string("oomlens ") + command.synopsis, command.summary);
    text += "  oomlens --help | --version\n\n"
            "Run 'oomlens COMMAND --help' for a command's options.\n";
    return text;
}

int run(const std::vector<std::string>& arguments, Gui gui)
{
    if (arguments.size() > 1) {
        if (const Command* command = findCommand(arguments[1]))
            return command->run(std::vector<std::string>(arguments.begin() + 2, arguments.end()));
    }
    // No command: only --help and --version mean something without a GUI.
    OptionParser parser;
    parser.addHelpOption();
    parser.addVersionOption();
    if (!parser.parse(afterProgram(arguments)))
        return usageError(parseError(parser), gui);
    if (const std::optional<int> answered = answerHelpOrVersion(parser, gui))
        return *answered;
    if (arguments.size() > 1)
        return usageError("unknown command '" + arguments[1] + "'", gui);
    return usageError("no command given", gui);
}

GuiCommandLine parseGuiCommandLine(const std::vector<std::string>& arguments)
{
    GuiCommandLine result;
    OptionParser parser;
    parser.addHelpOption();
    parser.addVersionOption();
    // Used to make the README's pictures; not part of the documented command line.
    Option screenshot("screenshot", "Render every view of FILE... to DIR as PNG and exit.", "DIR");
    screenshot.hiddenFromHelp = true;
    parser.addOption(screenshot);
    if (!parser.parse(afterProgram(arguments))) {
        result.exitStatus = usageError(parseError(parser), Gui::Built);
        return result;
    }
    result.exitStatus = answerHelpOrVersion(parser, Gui::Built);
    result.files = parser.positionalArguments();
    result.screenshotDirectory = parser.value(screenshot);
    return result;
}

} // namespace oomlens::cli
