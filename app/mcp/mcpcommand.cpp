#include "app/cli/mcpcommand.h"

#include "app/cli/commandline.h"
#include "app/mcp/mcpserver.h"
#include "core/numbertext.h"

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

int runMcp(const std::vector<std::string>& arguments)
{
    CommandLine commandLine("mcp [--cache N]",
        "Serves oomlens to a coding agent as a Model Context Protocol server on standard input and output: tools "
        "diagnose, live_at, evidence, step_peaks, stack_history, compare, plan and report. Register it with the "
        "agent as the command `oomlens mcp`.");
    OptionParser& parser = commandLine.parser();
    const Option cache("cache", "Cases kept decoded between calls (default 3).", "N");
    parser.addOption(cache);
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;
    if (!parser.positionalArguments().empty())
        return commandLine.usageError("unexpected argument '" + parser.positionalArguments().front() + "'");
    size_t cachedCases = 3;
    if (parser.isSet(cache)) {
        const std::optional<unsigned> count = unsignedFromText(parser.value(cache));
        if (!count || *count == 0 || *count > 64)
            return commandLine.usageError("--cache needs a count from 1 to 64, got '" + parser.value(cache) + "'");
        cachedCases = *count;
    }

    // Standard output carries the protocol alone: nothing else may print there.
    std::ios::sync_with_stdio(false);
    std::fprintf(stderr, "oomlens mcp %s: serving on stdin/stdout\n", OOMLENS_VERSION);
    mcp::McpServer server(cachedCases);
    server.serve(std::cin, std::cout);
    return 0;
}

} // namespace oomlens::cli
