#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens mcp`: the Model Context Protocol server on standard input and output (one JSON-RPC
// message per line; logs on stderr), until standard input closes. Returns 0 then, 2 for usage
// errors. Declared here beside the command table that names it, defined by the server
// (app/mcp/mcpcommand.cpp): the command line includes nothing of the server, and the server uses
// the command line only through this entry and CommandLine (app/cli/commandline.h), which reads
// the command's own options.
int runMcp(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
