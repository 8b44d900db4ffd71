#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace oomlens {

// The few string helpers std::string_view lacks, written once for every layer. Prefixes and
// suffixes need none: C++20's text.starts_with("x") and text.ends_with("x") say it.
// ASCII only, on purpose: the inputs' keywords (PyTorch's messages, file names, JSON keys) are
// ASCII, and a locale must not change how a log is read.

constexpr bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

constexpr bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

constexpr bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

constexpr std::string_view trimmedLeft(std::string_view text)
{
    size_t begin = 0;
    while (begin < text.size() && isSpace(text[begin]))
        ++begin;
    return text.substr(begin);
}

constexpr std::string_view trimmed(std::string_view text)
{
    text = trimmedLeft(text);
    size_t end = text.size();
    while (end > 0 && isSpace(text[end - 1]))
        --end;
    return text.substr(0, end);
}

inline std::string lowercase(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    return out;
}

// Columns a terminal gives UTF-8 text: one per character, not per byte ("—" is three bytes).
constexpr size_t displayWidth(std::string_view text)
{
    size_t columns = 0;
    for (char c : text)
        columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    return columns;
}

// A column of a plain-text table: the text right- or left-aligned in `width` characters; longer
// text is kept whole.
inline std::string padLeft(std::string_view text, size_t width)
{
    const size_t shown = displayWidth(text);
    return (shown >= width ? std::string() : std::string(width - shown, ' ')) + std::string(text);
}

inline std::string padRight(std::string_view text, size_t width)
{
    const size_t shown = displayWidth(text);
    return std::string(text) + (shown >= width ? std::string() : std::string(width - shown, ' '));
}

} // namespace oomlens
