#include "core/numbertext.h"

#include "core/characters.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace oomlens {

namespace {

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

bool isAsciiSpace(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

// An optional sign and decimal digits, nothing else: the magnitude and whether it is negative.
// Integers are trimmed of ASCII white space only (a no-break space before one is no number),
// doubles of any (Qt read them so).
std::optional<std::pair<uint64_t, bool>> readInteger(std::string_view text)
{
    while (!text.empty() && isAsciiSpace(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && isAsciiSpace(text.back()))
        text.remove_suffix(1);
    const bool negative = text.starts_with('-');
    if (negative || text.starts_with('+'))
        text.remove_prefix(1);
    uint64_t magnitude = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), magnitude);
    if (text.empty() || !isDigit(text.front()) || error != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return std::pair { magnitude, negative };
}

// [sign] (digits [. digits] | . digits) [e [sign] digits], letters already lower case.
bool isDecimalNumber(std::string_view text)
{
    size_t at = text.starts_with('+') || text.starts_with('-') ? 1 : 0;
    const auto digits = [&] {
        const size_t start = at;
        while (at < text.size() && isDigit(text[at]))
            ++at;
        return at - start;
    };
    size_t mantissa = digits();
    if (at < text.size() && text[at] == '.') {
        ++at;
        mantissa += digits();
    }
    if (mantissa == 0)
        return false;
    if (at < text.size() && text[at] == 'e') {
        ++at;
        if (at < text.size() && (text[at] == '+' || text[at] == '-'))
            ++at;
        if (digits() == 0)
            return false;
    }
    return at == text.size();
}

// Whether a digit before the exponent is not 0: a value that reads as 0 then underflowed.
bool meansNonZero(std::string_view text)
{
    for (const char c : text) {
        if (c == 'e')
            return false;
        if (c >= '1' && c <= '9')
            return true;
    }
    return false;
}

} // namespace

std::optional<int> intFromText(std::string_view text)
{
    const auto read = readInteger(text);
    if (!read)
        return std::nullopt;
    const auto [magnitude, negative] = *read;
    const uint64_t limit
        = negative ? uint64_t(std::numeric_limits<int>::max()) + 1 : uint64_t(std::numeric_limits<int>::max());
    if (magnitude > limit)
        return std::nullopt;
    return negative ? static_cast<int>(-static_cast<int64_t>(magnitude)) : static_cast<int>(magnitude);
}

std::optional<unsigned> unsignedFromText(std::string_view text)
{
    const auto read = readInteger(text);
    if (!read || read->second || read->first > std::numeric_limits<unsigned>::max())
        return std::nullopt;
    return static_cast<unsigned>(read->first);
}

std::optional<double> doubleFromText(std::string_view text)
{
    std::string lower(trimmedSpaces(text));
    for (char& c : lower) {
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    }
    if (lower == "nan")
        return std::numeric_limits<double>::quiet_NaN();
    if (lower == "inf" || lower == "+inf")
        return std::numeric_limits<double>::infinity();
    if (lower == "-inf")
        return -std::numeric_limits<double>::infinity();
    if (!isDecimalNumber(lower))
        return std::nullopt;
    const std::string_view unsigned_ = std::string_view(lower).substr(lower.starts_with('+') ? 1 : 0);
    double value = 0;
    const auto [end, error] = std::from_chars(unsigned_.data(), unsigned_.data() + unsigned_.size(), value);
    if (end != unsigned_.data() + unsigned_.size())
        return std::nullopt;
    if (error == std::errc::result_out_of_range) {
        // Too large, or too small to tell from 0: neither is a number here.
        return std::nullopt;
    }
    if (error != std::errc() || !std::isfinite(value) || (value == 0 && meansNonZero(lower)))
        return std::nullopt;
    return value;
}

} // namespace oomlens
