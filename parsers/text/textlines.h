#pragma once

#include "core/strings.h"

#include <string>
#include <string_view>
#include <vector>

namespace oomlens::text {

// The input cut into lines once, with what launchers put in front of every line removed
// (`[rank0]:`, `(VllmWorker rank=1 pid=254)`, srun's `0: `) and what loggers put before each message
// (vLLM's `ERROR 03-16 06:12:38 [file.py:375]`, logging's `2024-11-01 10:20:10,863 - root - ERROR -`), so the
// parsers see what Python printed.
// Holds views into the text it was built from (or into its own cleaned copy).
class TextLines
{
public:
    explicit TextLines(std::string_view text);

    size_t size() const { return m_lines.size(); }
    std::string_view operator[](size_t index) const { return m_lines[index]; }
    // 1-based line number in the original input for display and sourceLine fields.
    size_t lineNumber(size_t index) const { return m_numbers.empty() ? index + 1 : m_numbers[index]; }
    // The rank the line's launcher prefix named (torchrun's "[rankN]:", vLLM's "(VllmWorker rank=N pid=…)",
    // launcherranks.h); -1 for none.
    int rankOf(size_t index) const { return m_ranks.empty() ? -1 : m_ranks[index]; }
    // Distinct ranks the prefixes name, ascending.
    std::vector<int> ranks() const;
    // Some of these lines, in the order given, keeping their original line numbers and ranks: one
    // rank's lines out of a log where several ranks' lines interleave. Views into this object's
    // text, which must outlive the subset.
    TextLines subset(const std::vector<size_t>& indices) const;

private:
    TextLines() = default;
    std::string m_cleaned; // only used when the input needed cleaning (invalid UTF-8, ANSI colours, CR)
    std::vector<std::string_view> m_lines;
    std::vector<size_t> m_numbers; // a subset's original line numbers; empty: index + 1
    std::vector<int> m_ranks; // per line; empty when no line has a rank prefix
};

// trimmed, contains, isDigit and the rest the parsers share with core: core/strings.h.
size_t indentation(std::string_view line);

// Collapses every run of whitespace (spaces, tabs, newlines, NBSP) into one space and trims both ends:
// users re-wrap messages, terminals insert line breaks, and loggers pad with tabs.
std::string normalizedWhitespace(std::string_view text);

// Removes launcher prefixes in front of a line; at most a few, so a hostile line cannot loop.
std::string_view strippedLinePrefixes(std::string_view line);

// Valid UTF-8 copy: invalid bytes become U+FFFD, so every string we hand on can go into JSON.
bool isValidUtf8(std::string_view text);
std::string sanitizedUtf8(std::string_view text);

} // namespace oomlens::text
