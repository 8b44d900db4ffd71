#pragma once

#include <string>
#include <string_view>

namespace oomlens::report {

// Escapes text for HTML element content and attribute values (both quote kinds).
// Invalid UTF-8 becomes U+FFFD and control characters are dropped, because frame names and
// filenames come from pickles and logs that were never promised to be clean text.
std::string escapeHtml(std::string_view text);
void appendEscaped(std::string& out, std::string_view text);

// The visible text of an HTML document: tags removed, entities decoded, whitespace collapsed
// to one space per run with block elements on their own lines. For golden tests and
// "copy as text"; it understands the markup this module writes, not arbitrary HTML.
std::string htmlToText(std::string_view html);

} // namespace oomlens::report
