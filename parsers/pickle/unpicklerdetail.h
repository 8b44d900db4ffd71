#pragma once

// Pieces shared by the native unpickler's opcode loop (nativeunpickler.cpp) and its fast paths
// for frame lists and dict bodies (nativeunpicklerfastpaths.cpp).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace oomlens::pickle::unpicklerdetail {

inline constexpr uint64_t checkEvery = 256 * 1024; // bytes between cancel checks and progress reports

inline uint32_t little32(const unsigned char* p)
{
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::endian::native == std::endian::big)
        v = __builtin_bswap32(v);
    return v;
}

inline uint64_t little(const unsigned char* p, int width)
{
    if (width == 4)
        return little32(p);
    uint64_t v = 0;
    for (int b = width - 1; b >= 0; --b)
        v = (v << 8) | p[b];
    return v;
}

} // namespace oomlens::pickle::unpicklerdetail
