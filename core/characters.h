#pragma once

// Text as its characters rather than its bytes, for the few places that count or trim them the
// way Qt's QString did (the help's columns, white space around a number): UTF-8 in, UTF-8 out.

#include <string_view>
#include <vector>

namespace oomlens {

// The characters of `text`, each a view of its UTF-8 bytes; a byte that starts no valid sequence
// is a character of its own.
std::vector<std::string_view> characters(std::string_view text);

// Whether the character is white space as Unicode has it (QChar::isSpace): tabs, line breaks,
// spaces of every width, no-break spaces.
bool isSpaceCharacter(std::string_view character);

// `text` without the white space around it.
std::string_view trimmedSpaces(std::string_view text);

} // namespace oomlens
