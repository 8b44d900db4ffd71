#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens mcp`: the Model Context Protocol server on standard input and output (one JSON-RPC
// message per line; logs on stderr), until standard input closes. Returns 0 then, 2 for usage
// errors.
int runMcp(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
