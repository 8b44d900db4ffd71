#include "app/cli/errorlines.h"

#include <cstdio>

namespace oomlens::cli {

namespace {

thread_local ErrorLineCapture* activeCapture = nullptr;

} // namespace

void printErrorLine(const std::string& line)
{
    std::fprintf(stderr, "%s\n", line.c_str());
    if (activeCapture)
        activeCapture->m_lines.push_back(line);
}

ErrorLineCapture::ErrorLineCapture()
    : m_outer(activeCapture)
{
    activeCapture = this;
}

ErrorLineCapture::~ErrorLineCapture()
{
    activeCapture = m_outer;
}

std::string ErrorLineCapture::joined() const
{
    std::string text;
    for (const std::string& line : m_lines) {
        if (!text.empty())
            text += '\n';
        text += line;
    }
    return text;
}

} // namespace oomlens::cli
