#pragma once

#include <cstddef>
#include <string_view>

namespace oomlens {

// At most `maxBytes` of `text`, cut before a UTF-8 character rather than inside it: a quote cut
// from valid text stays valid (a JSON document refuses half a character).
constexpr std::string_view utf8Prefix(std::string_view text, size_t maxBytes)
{
    if (text.size() <= maxBytes)
        return text;
    size_t end = maxBytes;
    // A continuation byte (10xxxxxx) right after the cut means a character straddles it; a
    // character is at most 4 bytes, so at most 3 steps back.
    for (int step = 0; step < 3 && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80; ++step)
        --end;
    return text.substr(0, end);
}

} // namespace oomlens
