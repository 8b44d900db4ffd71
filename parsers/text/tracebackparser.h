#pragma once

#include "core/textinputs.h"

#include <optional>
#include <string_view>
#include <vector>

namespace oomlens::text {

class TextLines;

// One run of Python traceback frames as found in the text, before it is linked to a message.
struct TracebackBlock
{
    TracebackInfo info;
    size_t firstLine = 0; // header, or the first frame when the header was cut off
    size_t lastLine = 0;
    std::optional<size_t> terminator; // the exception line right after the frames
    bool hasHeader = false;
};

struct TracebackScan
{
    std::vector<TracebackBlock> blocks;
    std::vector<size_t> chainSeparators; // "During handling of the above exception ..." lines
};

// Finds CPython, faulthandler and IPython tracebacks: frames, code lines and the exception line; what
// phase they show is core's reading (decideTracebackPhase). `messageStarts[i]` marks lines where an OOM
// message starts: such a line always ends the frames before it.
TracebackScan findTracebacks(const TextLines& lines, const std::vector<char>& messageStarts);

// Parses one frame line in any of the supported styles; exposed for tests.
std::optional<TracebackFrame> parseFrameLine(std::string_view line);

} // namespace oomlens::text
