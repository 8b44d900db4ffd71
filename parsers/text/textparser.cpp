#include "parsers/text/textparser.h"

namespace oomlens {

TextFindings parseText(std::string_view)
{
    return {};
}

InputKind classifyText(std::string_view, const TextFindings&)
{
    return InputKind::Unknown;
}

} // namespace oomlens
