#pragma once

#include <string>

namespace oomlens::cli {

// The one-line errors the commands print on stderr ("oomlens: PATH: reason", "oomlens plan:
// --batch needs a number, got 'x'"). An input's failure is worded by opening/inputfailure.h,
// which the MCP server uses too, so that an agent reads the line a terminal user does.
void printErrorLine(const std::string& line);

} // namespace oomlens::cli
