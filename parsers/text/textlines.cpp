#include "parsers/text/textlines.h"
#include "core/strings.h"

#include <algorithm>

namespace oomlens::text {

namespace {

size_t utf8SequenceLength(std::string_view text, size_t pos)
{
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80)
        return 1;
    size_t length = 0;
    uint32_t minimum = 0;
    uint32_t code = 0;
    if ((c & 0xE0) == 0xC0) {
        length = 2;
        minimum = 0x80;
        code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        length = 3;
        minimum = 0x800;
        code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        length = 4;
        minimum = 0x10000;
        code = c & 0x07;
    } else {
        return 0;
    }
    if (pos + length > text.size())
        return 0;
    for (size_t i = 1; i < length; ++i) {
        const auto next = static_cast<unsigned char>(text[pos + i]);
        if ((next & 0xC0) != 0x80)
            return 0;
        code = (code << 6) | (next & 0x3F);
    }
    if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
        return 0;
    return length;
}

// Drops ANSI colour sequences (ESC [ ... letter) and stray carriage returns; tqdm and coloured
// loggers put both into the logs people paste.
void appendWithoutEscapes(std::string& out, std::string_view text)
{
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\x1b') {
            if (i + 1 < text.size() && text[i + 1] == '[') {
                size_t j = i + 2;
                while (j < text.size() && !(text[j] >= '@' && text[j] <= '~'))
                    ++j;
                i = j; // the final letter of the sequence; the loop steps past it
            }
            continue;
        }
        if (c == '\r') {
            if (i + 1 < text.size() && text[i + 1] == '\n')
                continue;
            out.push_back('\n');
            continue;
        }
        out.push_back(c);
    }
}

} // namespace

bool isValidUtf8(std::string_view text)
{
    for (size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            ++i;
            continue;
        }
        const size_t length = utf8SequenceLength(text, i);
        if (length == 0)
            return false;
        i += length;
    }
    return true;
}

std::string sanitizedUtf8(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const size_t length = utf8SequenceLength(text, i);
        if (length == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
            continue;
        }
        out.append(text.substr(i, length));
        i += length;
    }
    return out;
}

TextLines::TextLines(std::string_view text)
{
    const bool needsCleaning = text.find_first_of("\x1b\r") != std::string_view::npos || !isValidUtf8(text);
    std::string_view source = text;
    if (needsCleaning) {
        std::string withoutEscapes;
        withoutEscapes.reserve(text.size());
        appendWithoutEscapes(withoutEscapes, text);
        m_cleaned = isValidUtf8(withoutEscapes) ? std::move(withoutEscapes) : sanitizedUtf8(withoutEscapes);
        source = m_cleaned;
    }
    m_lines.reserve(source.size() / 64 + 1);
    size_t begin = 0;
    while (begin <= source.size()) {
        size_t end = source.find('\n', begin);
        if (end == std::string_view::npos)
            end = source.size();
        m_lines.push_back(strippedLinePrefixes(source.substr(begin, end - begin)));
        if (end == source.size())
            break;
        begin = end + 1;
    }
    // A final newline does not start another line.
    if (!m_lines.empty() && m_lines.back().empty() && !source.empty() && source.back() == '\n')
        m_lines.pop_back();
}

size_t indentation(std::string_view line)
{
    size_t count = 0;
    while (count < line.size() && (line[count] == ' ' || line[count] == '\t'))
        ++count;
    return count;
}

std::string normalizedWhitespace(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    bool pendingSpace = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool nbsp = c == '\xC2' && i + 1 < text.size() && text[i + 1] == '\xA0';
        if (isSpace(c) || nbsp) {
            pendingSpace = true;
            if (nbsp)
                ++i;
            continue;
        }
        if (pendingSpace && !out.empty())
            out.push_back(' ');
        pendingSpace = false;
        out.push_back(c);
    }
    return out;
}

namespace {

bool isLogLevel(std::string_view word)
{
    for (std::string_view level : { "DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL" }) {
        if (word == level)
            return true;
    }
    return false;
}

// Digits and separators in a fixed shape: "dd-dd dd:dd:dd" is matched by "00-00 00:00:00".
bool matchesShape(std::string_view text, std::string_view shape)
{
    if (text.size() < shape.size())
        return false;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == '0' ? !isDigit(text[i]) : text[i] != shape[i])
            return false;
    }
    return true;
}

// What a logger puts in front of each message it prints, tracebacks included; the length of that
// prefix in `rest`, or 0.
// vLLM: "ERROR 03-16 06:12:38 [multiproc_executor.py:375] "
// Python logging's "%(asctime)s - %(name)s - %(levelname)s - ": "2024-11-01 10:20:10,863 - root - ERROR - "
size_t loggerPrefixLength(std::string_view rest)
{
    const size_t space = rest.find(' ');
    if (space != std::string_view::npos && isLogLevel(rest.substr(0, space))
        && matchesShape(rest.substr(space + 1), "00-00 00:00:00 [")) {
        const size_t close = rest.find("] ", space + 16);
        if (close != std::string_view::npos && close < space + 16 + 80)
            return close + 2;
    }
    if (matchesShape(rest, "0000-00-00 00:00:00,000 - ")) {
        const size_t name = rest.find(" - ", 26);
        if (name == std::string_view::npos || name > 26 + 80)
            return 0;
        const size_t level = rest.find(" - ", name + 3);
        if (level != std::string_view::npos && isLogLevel(rest.substr(name + 3, level - name - 3)))
            return level + 3;
    }
    return 0;
}

} // namespace

std::string_view strippedLinePrefixes(std::string_view line)
{
    for (int round = 0; round < 4; ++round) {
        const std::string_view rest = trimmedLeft(line);
        // torchrun: "[rank0]:", "[default0]:"
        if (rest.starts_with("[rank") || rest.starts_with("[default")) {
            const size_t close = rest.find("]:");
            if (close != std::string_view::npos && close < 16) {
                line = rest.substr(close + 2);
                if (!line.empty() && line[0] == ' ')
                    line.remove_prefix(1);
                continue;
            }
        }
        // vLLM / Ray workers: "(VllmWorker rank=1 pid=254)", "(RayWorkerWrapper pid=3120, ip=10.0.0.2)"
        if (rest.starts_with("(")) {
            const size_t close = rest.find(')');
            if (close != std::string_view::npos && close < 80 && contains(rest.substr(0, close), "pid=")) {
                line = rest.substr(close + 1);
                if (!line.empty() && line[0] == ' ')
                    line.remove_prefix(1);
                continue;
            }
        }
        if (const size_t logger = loggerPrefixLength(rest)) {
            line = rest.substr(logger);
            continue;
        }
        // srun --label: "0: ", "12: " at the very start of the line
        size_t digits = 0;
        while (digits < line.size() && digits < 5 && isDigit(line[digits]))
            ++digits;
        if (digits > 0 && digits + 1 < line.size() && line[digits] == ':' && line[digits + 1] == ' ') {
            line.remove_prefix(digits + 2);
            continue;
        }
        break;
    }
    return line;
}

} // namespace oomlens::text
