#include "core/characters.h"

#include <cstdint>

namespace oomlens {

namespace {

// The length of the UTF-8 sequence that starts at `text[0]`, 1 when none valid does.
size_t sequenceLength(std::string_view text)
{
    const auto byte = [&text](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    const size_t length = lead < 0x80 ? 1
        : (lead >> 5) == 0x6          ? 2
        : (lead >> 4) == 0xE          ? 3
        : (lead >> 3) == 0x1E         ? 4
                                      : 0;
    if (length <= 1 || length > text.size())
        return 1;
    for (size_t i = 1; i < length; ++i) {
        if ((byte(i) & 0xC0) != 0x80)
            return 1;
    }
    return length;
}

char32_t codePoint(std::string_view character)
{
    const auto byte
        = [&character](size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(character[i])); };
    switch (character.size()) {
    case 2:
        return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
        return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    case 4:
        return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
    default:
        return character.empty() ? 0 : byte(0);
    }
}

} // namespace

std::vector<std::string_view> characters(std::string_view text)
{
    std::vector<std::string_view> result;
    while (!text.empty()) {
        const size_t length = sequenceLength(text);
        result.push_back(text.substr(0, length));
        text.remove_prefix(length);
    }
    return result;
}

bool isSpaceCharacter(std::string_view character)
{
    const char32_t c = codePoint(character);
    if (character.size() == 1 && c >= 0x80)
        return false; // a stray byte, not U+0080..U+00FF
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680
        || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string_view trimmedSpaces(std::string_view text)
{
    while (!text.empty() && isSpaceCharacter(text.substr(0, sequenceLength(text))))
        text.remove_prefix(sequenceLength(text));
    while (!text.empty()) {
        // The last character: step back over continuation bytes to its lead byte.
        size_t start = text.size() - 1;
        while (start > 0 && text.size() - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
            --start;
        const std::string_view last = text.substr(start);
        if (sequenceLength(last) != last.size() || !isSpaceCharacter(last))
            break;
        text.remove_suffix(last.size());
    }
    return text;
}

} // namespace oomlens
