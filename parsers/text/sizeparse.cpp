#include "parsers/text/sizeparse.h"
#include "core/strings.h"

#include <array>
#include <utility>

namespace oomlens::text {

namespace {

__extension__ typedef unsigned __int128 uint128;

bool isAlpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

} // namespace

uint64_t unitMultiplier(std::string_view unit)
{
    static constexpr std::array<std::pair<std::string_view, uint64_t>, 14> units { {
        { "bytes", 1 },
        { "byte", 1 },
        { "B", 1 },
        { "KiB", uint64_t(1) << 10 },
        { "KB", uint64_t(1) << 10 },
        { "kB", uint64_t(1) << 10 },
        { "MiB", uint64_t(1) << 20 },
        { "MB", uint64_t(1) << 20 },
        { "GiB", uint64_t(1) << 30 },
        { "GB", uint64_t(1) << 30 },
        { "TiB", uint64_t(1) << 40 },
        { "TB", uint64_t(1) << 40 },
        { "PiB", uint64_t(1) << 50 },
        { "PB", uint64_t(1) << 50 },
    } };
    for (const auto& [name, factor] : units) {
        if (name == unit)
            return factor;
    }
    return 0;
}

std::optional<uint64_t> parseIntegerAt(std::string_view text, size_t pos, size_t* end)
{
    while (pos < text.size() && text[pos] == ' ')
        ++pos;
    if (pos >= text.size() || !isDigit(text[pos]))
        return std::nullopt;
    uint64_t value = 0;
    bool overflow = false;
    while (pos < text.size() && isDigit(text[pos])) {
        const auto digit = static_cast<uint64_t>(text[pos] - '0');
        if (value > (UINT64_MAX - digit) / 10)
            overflow = true;
        else
            value = value * 10 + digit;
        ++pos;
    }
    if (end)
        *end = pos;
    if (overflow)
        return std::nullopt;
    return value;
}

std::optional<SizeToken> parseSizeAt(std::string_view text, size_t pos)
{
    while (pos < text.size() && text[pos] == ' ')
        ++pos;
    SizeToken token;
    token.begin = pos;
    size_t cursor = pos;
    // Integer and fractional digits are kept apart so that the result is exact, not a double.
    uint64_t integer = 0;
    bool integerOverflow = false;
    if (cursor >= text.size() || !isDigit(text[cursor]))
        return std::nullopt;
    while (cursor < text.size() && isDigit(text[cursor])) {
        const auto digit = static_cast<uint64_t>(text[cursor] - '0');
        if (integer > (UINT64_MAX - digit) / 10)
            integerOverflow = true;
        else
            integer = integer * 10 + digit;
        ++cursor;
    }
    uint64_t fraction = 0;
    uint64_t scale = 1;
    if (cursor + 1 < text.size() && text[cursor] == '.' && isDigit(text[cursor + 1])) {
        ++cursor;
        while (cursor < text.size() && isDigit(text[cursor])) {
            if (scale < 1000000000ULL) {
                fraction = fraction * 10 + static_cast<uint64_t>(text[cursor] - '0');
                scale *= 10;
            }
            ++cursor;
        }
    }
    size_t unitBegin = cursor;
    if (unitBegin < text.size() && text[unitBegin] == ' ')
        ++unitBegin;
    size_t unitEnd = unitBegin;
    while (unitEnd < text.size() && isAlpha(text[unitEnd]))
        ++unitEnd;
    const uint64_t multiplier = unitMultiplier(text.substr(unitBegin, unitEnd - unitBegin));
    if (multiplier == 0)
        return std::nullopt;
    token.end = unitEnd;

    uint64_t whole = 0;
    if (integerOverflow || __builtin_mul_overflow(integer, multiplier, &whole)) {
        token.garbage = true;
        return token;
    }
    // round(fraction / scale * multiplier) in integers: fraction < 10^9 times up to 2^50 needs 128 bits.
    uint64_t part = 0;
    if (fraction != 0) {
        const uint128 product = static_cast<uint128>(fraction) * multiplier;
        part = static_cast<uint64_t>((product + scale / 2) / scale);
    }
    uint64_t total = 0;
    if (__builtin_add_overflow(whole, part, &total) || total >= (uint64_t(1) << 63)) {
        token.garbage = true;
        return token;
    }
    token.bytes = total;
    return token;
}

std::optional<SizeToken> sizeAfter(std::string_view text, std::string_view marker, size_t from)
{
    const size_t at = text.find(marker, from);
    if (at == std::string_view::npos)
        return std::nullopt;
    return parseSizeAt(text, at + marker.size());
}

} // namespace oomlens::text
