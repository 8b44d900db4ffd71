#include "core/report/htmlescape.h"

#include <array>
#include <cstdint>

namespace oomlens::report {

namespace {

constexpr std::string_view replacementCharacter = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is not valid.
size_t validSequenceLength(std::string_view text, size_t i)
{
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t minimum = 0;
    uint32_t codepoint = 0;
    if (lead < 0x80)
        return 1;
    if ((lead & 0xE0) == 0xC0) {
        length = 2;
        minimum = 0x80;
        codepoint = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3;
        minimum = 0x800;
        codepoint = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4;
        minimum = 0x10000;
        codepoint = lead & 0x07;
    } else {
        return 0;
    }
    if (i + length > text.size())
        return 0;
    for (size_t k = 1; k < length; ++k) {
        const auto c = static_cast<unsigned char>(text[i + k]);
        if ((c & 0xC0) != 0x80)
            return 0;
        codepoint = (codepoint << 6) | (c & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not text.
    if (codepoint < minimum || codepoint > 0x10FFFF || (codepoint >= 0xD800 && codepoint <= 0xDFFF))
        return 0;
    return length;
}

} // namespace

void appendEscaped(std::string& out, std::string_view text)
{
    out.reserve(out.size() + text.size());
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&#39;";
            break;
        case '\n':
        case '\t':
            out += c;
            break;
        case '\r':
            break;
        default: {
            const auto byte = static_cast<unsigned char>(c);
            if (byte < 0x20 || byte == 0x7F)
                break;
            const size_t length = validSequenceLength(text, i);
            if (length == 0) {
                out += replacementCharacter;
                ++i;
                continue;
            }
            out.append(text.substr(i, length));
            i += length;
            continue;
        }
        }
        ++i;
    }
}

std::string escapeHtml(std::string_view text)
{
    std::string out;
    appendEscaped(out, text);
    return out;
}

namespace {

bool isBlockTag(std::string_view name)
{
    static constexpr std::array<std::string_view, 25> blocks
        = { "p", "div", "section", "article", "header", "footer", "h1", "h2", "h3", "h4", "li", "ul", "ol", "tr",
              "table", "pre", "details", "summary", "br", "dl", "dt", "dd", "figure", "figcaption", "nav" };
    for (std::string_view block : blocks) {
        if (block == name)
            return true;
    }
    return false;
}

void appendEntity(std::string& out, std::string_view entity)
{
    if (entity == "amp")
        out += '&';
    else if (entity == "lt")
        out += '<';
    else if (entity == "gt")
        out += '>';
    else if (entity == "quot")
        out += '"';
    else if (entity == "#39")
        out += '\'';
    else if (entity == "nbsp")
        out += ' ';
    else if (entity == "minus")
        out += "\xE2\x88\x92";
    else
        out.append("&").append(entity).append(";");
}

// Collapses runs of spaces and blank lines; preformatted text keeps its line breaks.
std::string tidy(const std::string& raw)
{
    std::string out;
    out.reserve(raw.size());
    bool pendingSpace = false;
    bool atLineStart = true;
    for (char c : raw) {
        if (c == '\n') {
            if (!atLineStart)
                out += '\n';
            atLineStart = true;
            pendingSpace = false;
        } else if (c == ' ' || c == '\t') {
            pendingSpace = !atLineStart;
        } else {
            if (pendingSpace)
                out += ' ';
            pendingSpace = false;
            atLineStart = false;
            out += c;
        }
    }
    if (!out.empty() && out.back() != '\n')
        out += '\n';
    return out;
}

} // namespace

std::string htmlToText(std::string_view html)
{
    std::string raw;
    raw.reserve(html.size() / 2);
    int hiddenDepth = 0; // inside <style>, <svg> or <head>: not visible text
    int preDepth = 0;
    bool firstCell = true;
    for (size_t i = 0; i < html.size();) {
        const char c = html[i];
        if (c == '<') {
            const size_t end = html.find('>', i);
            if (end == std::string_view::npos)
                break;
            std::string_view tag = html.substr(i + 1, end - i - 1);
            const bool closing = !tag.empty() && tag.front() == '/';
            if (closing)
                tag.remove_prefix(1);
            const size_t nameEnd = tag.find_first_of(" \t\n/");
            const std::string_view name = tag.substr(0, nameEnd);
            if (name == "style" || name == "svg" || name == "head" || name == "title")
                hiddenDepth += closing ? -1 : 1;
            else if (name == "pre")
                preDepth += closing ? -1 : 1;
            if (hiddenDepth == 0) {
                if (name == "td" || name == "th") {
                    if (!closing && !firstCell)
                        raw += " | ";
                    firstCell = false;
                } else if (isBlockTag(name)) {
                    raw += '\n';
                    firstCell = true;
                }
            }
            i = end + 1;
            continue;
        }
        if (hiddenDepth > 0) {
            ++i;
            continue;
        }
        if (c == '&') {
            const size_t end = html.find(';', i);
            if (end != std::string_view::npos && end - i < 10) {
                appendEntity(raw, html.substr(i + 1, end - i - 1));
                i = end + 1;
                continue;
            }
        }
        if (c == '\n' && preDepth == 0)
            raw += ' ';
        else
            raw += c;
        ++i;
    }
    return tidy(raw);
}

} // namespace oomlens::report
