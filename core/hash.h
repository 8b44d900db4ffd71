#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace oomlens {

// A multiply only carries bits upwards: fold the high bits down before a table masks them.
inline uint64_t hashMix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    return h;
}

// The hash behind every interning table and the decoder's frame-list cache: eight bytes per step
// in four independent lanes, because one chain would make every multiply wait for the one before
// it, and a byte-wise hash spends one dependent multiply per byte. Inline: it sits in the
// decoder's hot loop.
inline uint64_t hashBytes(const void* data, size_t length)
{
    constexpr uint64_t k = 0x9E3779B97F4A7C15ULL;
    const auto* p = static_cast<const unsigned char*>(data);
    auto word = [p](size_t at) {
        uint64_t w;
        std::memcpy(&w, p + at, sizeof w);
        return w;
    };
    uint64_t a = length;
    uint64_t b = 0x243F6A8885A308D3ULL;
    uint64_t c = 0x13198A2E03707344ULL;
    uint64_t d = 0xA4093822299F31D0ULL;
    size_t i = 0;
    for (; i + 32 <= length; i += 32) {
        a = (a ^ word(i)) * k;
        b = (b ^ word(i + 8)) * k;
        c = (c ^ word(i + 16)) * k;
        d = (d ^ word(i + 24)) * k;
    }
    for (; i + 8 <= length; i += 8)
        a = (a ^ word(i)) * k;
    if (i < length) {
        uint64_t tail = 0;
        std::memcpy(&tail, p + i, length - i);
        b = (b ^ tail) * k;
    }
    return hashMix(a ^ std::rotl(b, 16) ^ std::rotl(c, 32) ^ std::rotl(d, 48));
}

} // namespace oomlens
