#include "parsers/pickle/pickleliterals.h"

#include <bit>
#include <charconv>
#include <cstring>

namespace oomlens::pickle::literals {

namespace {

DecodeError errorAt(const std::string& message, uint64_t offset)
{
    return DecodeError(ErrorKind::Format, message + " at byte " + std::to_string(offset));
}

void appendUtf8(std::string& out, uint32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

} // namespace

Value longFromBytes(const unsigned char* p, uint64_t n)
{
    if (n == 0)
        return Value::integer(0);
    if (n <= 8 && std::endian::native == std::endian::little) {
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        const unsigned shift = 64 - 8 * static_cast<unsigned>(n);
        return Value::integer(static_cast<int64_t>(v << shift) >> shift); // sign-extend
    }
    const bool negative = p[n - 1] & 0x80;
    if (n > 8) {
        // Fits in 64 bits only when the extra bytes are pure sign extension.
        const unsigned char fill = negative ? 0xff : 0x00;
        for (uint64_t b = 8; b < n; ++b) {
            if (p[b] != fill)
                return Value::bigInteger();
        }
        // A negative value needs bit 63 set; a positive one up to 2^64-1 is kept as its bit
        // pattern (C++ code writes size_t(-1) as a "line" now and then).
        if (negative && (p[7] & 0x80) == 0)
            return Value::bigInteger();
        n = 8;
    }
    uint64_t v = negative ? ~uint64_t(0) : 0;
    for (uint64_t b = 0; b < n; ++b) {
        v &= ~(uint64_t(0xff) << (8 * b));
        v |= uint64_t(p[b]) << (8 * b);
    }
    return Value::integer(static_cast<int64_t>(v));
}

Value intFromText(std::string_view text, bool isLong, uint64_t offset)
{
    if (!isLong && text == "00")
        return Value::boolean(false);
    if (!isLong && text == "01")
        return Value::boolean(true);
    if (isLong && !text.empty() && text.back() == 'L')
        text.remove_suffix(1);
    int64_t v = 0;
    const char* first = text.data();
    if (!text.empty() && text.front() == '+')
        ++first;
    const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) {
        uint64_t u = 0;
        const auto [uend, uec] = std::from_chars(first, text.data() + text.size(), u);
        if (uec == std::errc() && uend == text.data() + text.size())
            return Value::integer(static_cast<int64_t>(u));
        return Value::bigInteger();
    }
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw errorAt(std::string("not a valid pickle: bad ") + (isLong ? "LONG" : "INT") + " literal", offset);
    return Value::integer(v);
}

Value floatFromBigEndian(const unsigned char* p)
{
    uint64_t bits = 0;
    for (int b = 0; b < 8; ++b)
        bits = (bits << 8) | p[b];
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return Value::real(d);
}

Value floatFromText(std::string_view text, uint64_t offset)
{
    double d = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec != std::errc() || end != text.data() + text.size())
        throw errorAt("not a valid pickle: bad FLOAT literal", offset);
    return Value::real(d);
}

uint64_t memoIndexFromText(std::string_view text, const char* opcode, uint64_t offset)
{
    uint64_t index = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
    if (ec != std::errc() || end != text.data() + text.size())
        throw errorAt(std::string("not a valid pickle: bad ") + opcode + " index", offset);
    return index;
}

std::string_view latin1ToUtf8(std::string_view raw, std::string& out)
{
    out.clear();
    for (const char ch : raw)
        appendUtf8(out, static_cast<unsigned char>(ch));
    return out;
}

std::string_view rawUnicodeToUtf8(std::string_view line, std::string& out, uint64_t offset)
{
    out.clear();
    for (size_t i = 0; i < line.size(); ++i) {
        const auto ch = static_cast<unsigned char>(line[i]);
        if (ch == '\\' && i + 1 < line.size() && (line[i + 1] == 'u' || line[i + 1] == 'U')) {
            const size_t digits = line[i + 1] == 'u' ? 4 : 8;
            uint32_t cp = 0;
            if (i + 2 + digits > line.size()
                || std::from_chars(line.data() + i + 2, line.data() + i + 2 + digits, cp, 16).ptr
                    != line.data() + i + 2 + digits
                || cp > 0x10ffff)
                throw errorAt("not a valid pickle: bad escape in UNICODE", offset);
            appendUtf8(out, cp);
            i += 1 + digits;
        } else {
            appendUtf8(out, ch);
        }
    }
    return out;
}

} // namespace oomlens::pickle::literals
