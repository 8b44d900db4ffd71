#include "app/cli/cli.h"

#include "app/cli/commandline.h"
#include "app/cli/comparecommand.h"
#include "app/cli/diagnose.h"
#include "app/cli/plancommand.h"
#include "app/cli/report.h"
#include "app/cli/summarize.h"
#include "app/mcp/mcpcommand.h"

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

const Command* findCommand(const QString& name)
{
    for (const Command& command : commandTable) {
        if (name == QLatin1String(command.name))
            return &command;
    }
    return nullptr;
}

QString usageText()
{
    // Synopses line up in one column; one too long for it puts its summary on the next line.
    constexpr qsizetype summaryColumn = 52;
    // `-> QString`: with QStringBuilder an `auto` return would refer to the lambda's locals.
    const auto line = [](const QString& synopsis, const QString& summary) -> QString {
        QString text = QStringLiteral("  ") + synopsis;
        text += text.size() < summaryColumn ? QString(summaryColumn - text.size(), QLatin1Char(' '))
                                            : QLatin1Char('\n') + QString(summaryColumn, QLatin1Char(' '));
        return text + summary + QLatin1Char('\n');
    };
    QString text = QStringLiteral("usage:\n");
    text += line(QStringLiteral("oomlens [FILE...]"), QStringLiteral("open the GUI, optionally with files"));
    for (const Command& command : commandTable)
        text += line(
            QStringLiteral("oomlens ") + QString::fromUtf8(command.synopsis), QString::fromUtf8(command.summary));
    text += QStringLiteral("  oomlens --help | --version\n\n"
                           "Run 'oomlens COMMAND --help' for a command's options.\n");
    return text;
}

// Help and version are answered the same way with or without a GUI, before any window exists.
std::optional<int> answerHelpOrVersion(const QCommandLineParser& parser)
{
    if (parser.isSet(QStringLiteral("help")) || parser.isSet(QStringLiteral("help-all"))) {
        std::fputs(qPrintable(usageText()), stdout);
        return 0;
    }
    if (parser.isSet(QStringLiteral("version"))) {
        std::printf("oomlens %s\n", OOMLENS_VERSION);
        return 0;
    }
    return std::nullopt;
}

int usageError(const QString& message)
{
    std::fprintf(stderr, "oomlens: %s\n%s", qPrintable(message), qPrintable(usageText()));
    return 2;
}

} // namespace

std::span<const Command> commands()
{
    return commandTable;
}

int run(const QStringList& arguments)
{
    if (const Command* command = findCommand(arguments.value(1)))
        return command->run(arguments.mid(2));
    // No command: only --help and --version mean something without a GUI.
    QCommandLineParser parser;
    parser.addHelpOption();
    parser.addVersionOption();
    if (!parser.parse(arguments))
        return usageError(parseError(parser));
    if (const std::optional<int> answered = answerHelpOrVersion(parser))
        return *answered;
    if (arguments.size() > 1)
        return usageError(QStringLiteral("unknown command '%1'").arg(arguments.at(1)));
    return usageError(QStringLiteral("no command given"));
}

GuiCommandLine parseGuiCommandLine(const QStringList& arguments)
{
    GuiCommandLine result;
    QCommandLineParser parser;
    parser.addHelpOption();
    parser.addVersionOption();
    // Used to make the README's pictures; not part of the documented command line.
    QCommandLineOption screenshot(QStringLiteral("screenshot"),
        QStringLiteral("Render every view of FILE... to DIR as PNG and exit."), QStringLiteral("DIR"));
    screenshot.setFlags(QCommandLineOption::HiddenFromHelp);
    parser.addOption(screenshot);
    if (!parser.parse(arguments)) {
        result.exitStatus = usageError(parseError(parser));
        return result;
    }
    result.exitStatus = answerHelpOrVersion(parser);
    result.files = parser.positionalArguments();
    result.screenshotDirectory = parser.value(screenshot);
    return result;
}

} // namespace oomlens::cli
