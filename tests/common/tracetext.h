#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

// The words of TraceBuilder's text form (see tracebuilder.h); parseBytes is declared there.
namespace oomlens::test {

// Phase word ("fwd", "bwd", "lopt", ...) -> its stack as `file:name:line;...`, innermost first.
const std::map<std::string, std::string, std::less<>>& phaseStacks();
// Splits on blanks; "..." groups words with spaces and the quotes are dropped.
std::vector<std::string> tokenize(std::string_view line);
// Decimal, or hexadecimal with 0x.
uint64_t parseAddress(std::string_view text, bool* ok);

} // namespace oomlens::test
