#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// The one-line errors the commands print on stderr ("oomlens: PATH: reason", "oomlens plan:
// --batch needs a number, got 'x'"). While an ErrorLineCapture is alive on the calling thread,
// each line is also kept in it: `oomlens mcp` runs the commands' own readers and returns their
// lines as a tool's error, so an agent reads the same line a terminal user does.
void printErrorLine(const std::string& line);

class ErrorLineCapture
{
public:
    ErrorLineCapture();
    ~ErrorLineCapture();
    ErrorLineCapture(const ErrorLineCapture&) = delete;
    ErrorLineCapture& operator=(const ErrorLineCapture&) = delete;

    const std::vector<std::string>& lines() const { return m_lines; }
    std::string joined() const; // the lines, one per line, without a trailing newline

private:
    friend void printErrorLine(const std::string& line);
    std::vector<std::string> m_lines;
    ErrorLineCapture* m_outer = nullptr; // captures nest: the innermost one keeps the lines
};

} // namespace oomlens::cli
