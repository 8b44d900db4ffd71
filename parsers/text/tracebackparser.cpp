#include "parsers/text/tracebackparser.h"

#include "core/analysis/tracebackphase.h"
#include "core/strings.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace oomlens::text {

namespace {

enum class FrameStyle : uint8_t { Python, IPython };

std::optional<TracebackFrame> parseFileFrame(std::string_view text)
{
    // text is everything after "File "
    TracebackFrame frame;
    std::string_view rest;
    if (!text.empty() && text.front() == '"') {
        const size_t close = text.find('"', 1);
        if (close == std::string_view::npos)
            return std::nullopt;
        frame.filename = std::string(text.substr(1, close - 1));
        rest = text.substr(close + 1);
    } else {
        // IPython 8: "File /path/trainer.py:2113, in Trainer.evaluate(...)"; also hand-edited
        // lines that lost the opening quote: File ~/bin/tabr.py", line 537, in evaluate
        size_t comma = text.find(", line ");
        if (comma == std::string_view::npos)
            comma = text.find(", in ");
        if (comma == std::string_view::npos)
            return std::nullopt;
        std::string_view name = text.substr(0, comma);
        if (name.ends_with("\""))
            name.remove_suffix(1);
        const size_t colon = name.rfind(':');
        if (colon != std::string_view::npos && colon + 1 < name.size() && isDigit(name[colon + 1])) {
            if (auto line = parseIntegerAt(name, colon + 1); line && *line < 100000000)
                frame.line = static_cast<int>(*line);
            name = name.substr(0, colon);
        }
        frame.filename = std::string(name);
        rest = text.substr(comma);
    }
    if (rest.starts_with(", line ")) {
        size_t end = 0;
        const auto line = parseIntegerAt(rest, 7, &end);
        if (!line)
            return std::nullopt;
        frame.line = static_cast<int>(std::min<uint64_t>(*line, 100000000));
        rest = rest.substr(end);
    }
    // ", in func" (CPython) or " in func" (faulthandler)
    if (rest.starts_with(", in "))
        frame.function = std::string(trimmed(rest.substr(5)));
    else if (rest.starts_with(" in "))
        frame.function = std::string(trimmed(rest.substr(4)));
    else if (!trimmed(rest).empty() && trimmed(rest) != ",")
        return std::nullopt; // a lone "," is a frame line cut at the end of a paste
    if (frame.filename.empty())
        return std::nullopt;
    return frame;
}

std::optional<TracebackFrame> parseOldIPythonFrame(std::string_view text)
{
    // "/usr/lib/python3.7/site-packages/jax/xla.py in _execute_compiled(compiled, avals)"
    const size_t in = text.find(" in ");
    if (in == std::string_view::npos || in == 0)
        return std::nullopt;
    const std::string_view file = text.substr(0, in);
    if (file.find(' ') != std::string_view::npos)
        return std::nullopt;
    if (!file.ends_with(".py") && !file.starts_with("<ipython-input"))
        return std::nullopt;
    const std::string_view call = text.substr(in + 4);
    const size_t paren = call.find('(');
    if (paren == std::string_view::npos || paren == 0)
        return std::nullopt;
    TracebackFrame frame;
    frame.filename = std::string(file);
    frame.function = std::string(call.substr(0, paren));
    return frame;
}

// A frame line whose start the paste lost: `ils/_contextlib.py", line 120, in decorate_context`,
// `/envs/x/lib/python3.6/site-packages/torch/nn/modules/module.py", line 605, in convert`. The closing
// quote, the line number and the function still make it a frame; what is left of the path is kept.
std::optional<TracebackFrame> parseCutFrameStart(std::string_view text)
{
    const size_t quote = text.find("\", line ");
    if (quote == std::string_view::npos || quote == 0 || text.substr(0, quote).find('"') != std::string_view::npos)
        return std::nullopt;
    auto frame = parseFileFrame("\"" + std::string(text));
    if (!frame || frame->line == 0 || frame->function.empty())
        return std::nullopt;
    return frame;
}

// A frame line behind something printed before it on the same line: "`ERROR:  File "/x/adam.py",
// line 505, in _multi_tensor_adam" (a logger's level, the poster's inline-code backtick). Only the
// full CPython form counts there, so prose that mentions a file is not read as a frame.
std::optional<TracebackFrame> parsePrefixedFrame(std::string_view text)
{
    const size_t at = text.find(" File \"");
    if (at == std::string_view::npos || text.substr(0, at).find('"') != std::string_view::npos)
        return std::nullopt;
    auto frame = parseFileFrame(text.substr(at + 6));
    if (!frame || frame->line == 0 || frame->function.empty())
        return std::nullopt;
    return frame;
}

std::optional<std::pair<TracebackFrame, FrameStyle>> parseFrame(std::string_view line)
{
    const std::string_view text = trimmed(line);
    if (!text.starts_with("File ")) {
        if (auto frame = parsePrefixedFrame(text))
            return std::make_pair(*frame, FrameStyle::Python);
        if (auto frame = parseCutFrameStart(text))
            return std::make_pair(*frame, FrameStyle::Python);
    }
    if (text.starts_with("File ")) {
        if (auto frame = parseFileFrame(text.substr(5))) {
            const bool ipython = text.size() > 5 && text[5] != '"' && !contains(text, ", line ");
            return std::make_pair(*frame, ipython ? FrameStyle::IPython : FrameStyle::Python);
        }
        return std::nullopt;
    }
    if (text.starts_with("Cell In[")) {
        TracebackFrame frame;
        const size_t comma = text.find(", line ");
        frame.filename = std::string(text.substr(0, comma));
        frame.function = "<cell>";
        if (comma != std::string_view::npos) {
            if (auto number = parseIntegerAt(text, comma + 7); number && *number < 100000000)
                frame.line = static_cast<int>(*number);
        }
        return std::make_pair(frame, FrameStyle::IPython);
    }
    if (auto frame = parseOldIPythonFrame(text))
        return std::make_pair(*frame, FrameStyle::IPython);
    return std::nullopt;
}

// One hop of a call chain a poster condensed by hand: "torch/_tensor.py:623 backward".
std::optional<TracebackFrame> parseChainHop(std::string_view hop)
{
    hop = trimmed(hop);
    const size_t space = hop.find(' ');
    if (space == std::string_view::npos)
        return std::nullopt;
    const std::string_view where = hop.substr(0, space);
    const std::string_view function = trimmed(hop.substr(space + 1));
    const size_t colon = where.rfind(':');
    if (colon == std::string_view::npos || !where.substr(0, colon).ends_with(".py") || function.empty())
        return std::nullopt;
    size_t end = 0;
    const auto line = parseIntegerAt(where, colon + 1, &end);
    if (!line || end != where.size() || *line >= 100000000)
        return std::nullopt;
    for (char c : function) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '<' || c == '>'))
            return std::nullopt;
    }
    TracebackFrame frame;
    frame.filename = std::string(where.substr(0, colon));
    frame.line = static_cast<int>(*line);
    frame.function = std::string(function);
    return frame;
}

// "train_ft.py:1208 _forward_backward_step -> torch/_tensor.py:623 backward", and its continuation
// "  -> autograd/graph.py:979 _engine_run_backward": frames outermost first, as CPython lists them.
// Empty unless every hop reads as one (a lone hop only on a continuation line).
std::vector<TracebackFrame> parseCallChain(std::string_view text)
{
    const bool continuation = text.starts_with("->");
    if (continuation)
        text.remove_prefix(2);
    else if (!contains(text, " -> "))
        return {};
    std::vector<TracebackFrame> frames;
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t arrow = text.find("->", begin);
        if (arrow == std::string_view::npos)
            arrow = text.size();
        auto frame = parseChainHop(text.substr(begin, arrow - begin));
        if (!frame)
            return {};
        frames.push_back(std::move(*frame));
        begin = arrow + 2;
    }
    return frames;
}

// "--> 960   out_bufs = compiled.execute(input_bufs)", "   958   for i, x in ..."
bool parseNumberedLine(std::string_view line, bool* arrow, int* number, std::string_view* code)
{
    std::string_view text = trimmed(line);
    *arrow = false;
    if (text.starts_with("-")) {
        size_t dashes = 0;
        while (dashes < text.size() && text[dashes] == '-')
            ++dashes;
        if (dashes >= text.size() || text[dashes] != '>')
            return false;
        *arrow = true;
        text = trimmedLeft(text.substr(dashes + 1));
    }
    size_t end = 0;
    const auto value = parseIntegerAt(text, 0, &end);
    if (!value || (end < text.size() && text[end] != ' '))
        return false;
    *number = static_cast<int>(std::min<uint64_t>(*value, 100000000));
    *code = trimmed(text.substr(end));
    return true;
}

bool isMarkerLine(std::string_view text)
{
    return !text.empty() && text.find_first_not_of(" ^~") == std::string_view::npos;
}

bool isElision(std::string_view text)
{
    return text == "..." || (text.starts_with("...<") && text.ends_with(">..."));
}

bool looksLikeException(std::string_view text)
{
    size_t end = 0;
    while (end < text.size()
        && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '.'))
        ++end;
    const std::string_view name = text.substr(0, end);
    if (name.empty() || (end < text.size() && text[end] != ':'))
        return false;
    for (std::string_view suffix : { "Error", "Exception", "Exit", "Interrupt", "Warning", "Failure", "Exhausted" }) {
        if (name.ends_with(suffix))
            return true;
    }
    return false;
}

bool isChainSeparator(std::string_view text)
{
    return text.starts_with("During handling of the above exception")
        || text.starts_with("The above exception was the direct cause");
}

// A paste that starts at the innermost frame's source line, its "File ..." line left behind:
//    attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
// torch.cuda.OutOfMemoryError: CUDA out of memory. ...
// The indented line right before the message, with nothing before it, is that frame's code.
std::optional<TracebackFrame> codeLineOpeningThePaste(const TextLines& lines, size_t messageLine)
{
    if (messageLine == 0)
        return std::nullopt;
    const std::string_view line = lines[messageLine - 1];
    const std::string_view code = trimmed(line);
    if (indentation(line) == 0 || code.empty() || !contains(code, "(") || looksLikeException(code))
        return std::nullopt;
    for (size_t before = 0; before + 1 < messageLine; ++before) {
        const std::string_view text = trimmed(lines[before]);
        if (!text.empty() && !text.starts_with("```"))
            return std::nullopt;
    }
    TracebackFrame frame;
    frame.filename = std::string(pasteOpeningLineFile);
    frame.code = std::string(code);
    return frame;
}

} // namespace

std::optional<TracebackFrame> parseFrameLine(std::string_view line)
{
    if (auto parsed = parseFrame(line))
        return parsed->first;
    return std::nullopt;
}

namespace {

// Walks the lines once, holding the block being read; each step takes one kind of line.
class TracebackScanner
{
public:
    TracebackScanner(const TextLines& lines, const std::vector<char>& messageStarts)
        : m_lines(lines)
        , m_messageStarts(messageStarts)
    { }

    TracebackScan run()
    {
        for (size_t i = 0; i < m_lines.size(); ++i) {
            if (takeHeaderOrSeparator(i) || takeFrames(i) || takeCodeLineOpeningThePaste(i) || !m_open)
                continue;
            continueBlock(i);
        }
        close(std::nullopt, true);
        return std::move(m_scan);
    }

private:
    void close(std::optional<size_t> terminator, bool truncated)
    {
        if (!m_open)
            return;
        if (!m_open->info.frames.empty() || terminator) {
            m_open->terminator = terminator;
            if (terminator) {
                m_open->lastLine = *terminator;
                m_open->info.exceptionLine = normalizedWhitespace(m_lines[*terminator]);
            }
            m_open->info.truncated = truncated;
            m_scan.blocks.push_back(std::move(*m_open));
        }
        m_open.reset();
    }

    // A block starting at `line` unless one is open.
    void openAt(size_t line)
    {
        if (m_open)
            return;
        m_open = TracebackBlock {};
        m_open->firstLine = line;
        m_open->info.sourceLine = m_lines.lineNumber(line);
    }

    bool takeHeaderOrSeparator(size_t i)
    {
        const std::string_view text = trimmed(m_lines[i]);
        if (contains(text, "Traceback (most recent call last)")) {
            close(std::nullopt, false);
            openAt(i);
            m_open->lastLine = i;
            m_open->hasHeader = true;
            m_lastWasFrame = false;
            m_blankRun = m_strayLines = 0;
            return true;
        }
        if (!isChainSeparator(text))
            return false;
        close(std::nullopt, false);
        m_scan.chainSeparators.push_back(i);
        return true;
    }

    // A frame line, or a call chain a poster condensed by hand; never on a message's first line.
    bool takeFrames(size_t i)
    {
        if (m_messageStarts[i])
            return false;
        const std::string_view line = m_lines[i];
        std::vector<TracebackFrame> chain = parseCallChain(trimmed(line));
        auto parsed = chain.empty() ? parseFrame(line) : std::nullopt;
        if (chain.empty() && !parsed)
            return false;
        openAt(i);
        m_style = parsed ? parsed->second : FrameStyle::Python;
        m_frameIndent = indentation(line);
        if (parsed)
            chain.push_back(std::move(parsed->first));
        for (TracebackFrame& frame : chain)
            m_open->info.frames.push_back(std::move(frame));
        m_open->lastLine = i;
        m_lastWasFrame = parsed.has_value(); // no source line follows a hand-condensed chain
        m_blankRun = m_strayLines = 0;
        return true;
    }

    bool takeCodeLineOpeningThePaste(size_t i)
    {
        if (m_open || !m_messageStarts[i])
            return false;
        auto frame = codeLineOpeningThePaste(m_lines, i);
        if (!frame)
            return false;
        openAt(i - 1);
        m_open->info.frames.push_back(std::move(*frame));
        close(i, false);
        return true;
    }

    // IPython's numbered source lines under a frame; the arrow marks the line that ran.
    bool takeNumberedLine(size_t i)
    {
        bool arrow = false;
        int number = 0;
        std::string_view code;
        if (!parseNumberedLine(m_lines[i], &arrow, &number, &code))
            return false;
        TracebackFrame& frame = m_open->info.frames.back();
        if (arrow) {
            if (frame.line == 0 || frame.function != "<cell>")
                frame.line = number;
            frame.code = std::string(code);
        }
        m_open->lastLine = i;
        return true;
    }

    // Header seen, no frame yet: the exception line may follow directly, or unrelated text.
    void takeLineAfterHeader(size_t i, std::string_view text)
    {
        if (m_messageStarts[i] || looksLikeException(text))
            close(i, false);
        else if (++m_strayLines > 3)
            m_open.reset();
    }

    // A line inside an open block: a separator, a frame's source line, or its end.
    void continueBlock(size_t i)
    {
        const std::string_view line = m_lines[i];
        const std::string_view text = trimmed(line);
        if (text.empty()) {
            // IPython separates frames with blank lines; CPython never prints them, but pastes do.
            if (++m_blankRun > (m_style == FrameStyle::IPython ? 2 : 1) && !m_open->info.frames.empty())
                close(std::nullopt, false);
            return;
        }
        if (isMarkerLine(text) || isElision(text) || text.starts_with("-----") || text.starts_with("```"))
            return;
        m_blankRun = 0;
        if (m_open->info.frames.empty())
            return takeLineAfterHeader(i, text);
        if (m_style == FrameStyle::IPython && takeNumberedLine(i))
            return;
        if (!m_messageStarts[i] && !looksLikeException(text) && m_style == FrameStyle::Python
            && (m_lastWasFrame || indentation(line) > m_frameIndent)) {
            TracebackFrame& frame = m_open->info.frames.back();
            if (frame.code.empty() && m_lastWasFrame)
                frame.code = std::string(text);
            m_open->lastLine = i;
            m_lastWasFrame = false;
            return;
        }
        // The exception or message line; CPython prints the exception right after the last frame,
        // whatever it looks like.
        close(i, false);
        m_lastWasFrame = false;
    }

    const TextLines& m_lines;
    const std::vector<char>& m_messageStarts;
    TracebackScan m_scan;
    std::optional<TracebackBlock> m_open;
    FrameStyle m_style = FrameStyle::Python;
    size_t m_frameIndent = 0;
    bool m_lastWasFrame = false;
    int m_blankRun = 0;
    int m_strayLines = 0;
};

} // namespace

TracebackScan findTracebacks(const TextLines& lines, const std::vector<char>& messageStarts)
{
    return TracebackScanner(lines, messageStarts).run();
}

} // namespace oomlens::text
