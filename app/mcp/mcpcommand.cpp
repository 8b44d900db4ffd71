#include "app/mcp/mcpcommand.h"

#include "app/cli/commandline.h"
#include "app/mcp/mcpserver.h"

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

int runMcp(const QStringList& arguments)
{
    CommandLine commandLine("mcp [--cache N]",
        QStringLiteral("Serves oomlens to a coding agent as a Model Context Protocol server on standard input and "
                       "output: tools diagnose, live_at, evidence, step_peaks, stack_history, compare, plan and "
                       "report. Register it with the agent as the command `oomlens mcp`."));
    QCommandLineParser& parser = commandLine.parser();
    const QCommandLineOption cache(
        QStringLiteral("cache"), QStringLiteral("Cases kept decoded between calls (default 3)."), QStringLiteral("N"));
    parser.addOption(cache);
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;
    if (!parser.positionalArguments().isEmpty())
        return commandLine.usageError(
            QStringLiteral("unexpected argument '%1'").arg(parser.positionalArguments().front()));
    size_t cachedCases = 3;
    if (parser.isSet(cache)) {
        bool ok = false;
        const uint count = parser.value(cache).toUInt(&ok);
        if (!ok || count == 0 || count > 64)
            return commandLine.usageError(
                QStringLiteral("--cache needs a count from 1 to 64, got '%1'").arg(parser.value(cache)));
        cachedCases = count;
    }

    // Standard output carries the protocol alone: nothing else may print there.
    std::ios::sync_with_stdio(false);
    std::fprintf(stderr, "oomlens mcp %s: serving on stdin/stdout\n", OOMLENS_VERSION);
    mcp::McpServer server(cachedCases);
    server.serve(std::cin, std::cout);
    return 0;
}

} // namespace oomlens::cli
