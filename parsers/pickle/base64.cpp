#include "parsers/pickle/base64.h"

namespace oomlens::pickle {

namespace {

// The value of one base64 digit; -1 for any other byte.
int digit(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

} // namespace

std::optional<std::string> decodeBase64(std::string_view encoded)
{
    std::string decoded;
    decoded.reserve(encoded.size() / 4 * 3 + 3);
    uint32_t buffer = 0;
    int bits = 0;
    for (size_t i = 0; i < encoded.size(); ++i) {
        const int value = digit(encoded[i]);
        if (value < 0) {
            // Padding ends the input: "=" last, or "==" last, in a length of whole quadruples.
            const bool padding = encoded[i] == '=' && encoded.size() % 4 == 0
                && (i + 1 == encoded.size() || (i + 2 == encoded.size() && encoded[i + 1] == '='));
            if (!padding)
                return std::nullopt;
            break;
        }
        buffer = (buffer << 6) | uint32_t(value);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            decoded.push_back(static_cast<char>(buffer >> bits));
            buffer &= (uint32_t(1) << bits) - 1;
        }
    }
    return decoded;
}

} // namespace oomlens::pickle
