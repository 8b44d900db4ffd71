#include "core/presentation/palette.h"

#include <array>
#include <cstdio>

namespace oomlens {

std::string Rgb::hex() const
{
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", red, green, blue);
    return buffer;
}

Rgb categoryColor(Category category, Theme theme)
{
    // Indexed by Category: { light, dark }.
    static constexpr std::array<std::array<Rgb, 2>, categoryCount> colors = { {
        { { { 0x2f, 0x6f, 0xb3 }, { 0x5b, 0x9b, 0xd5 } } }, // parameters
        { { { 0x1f, 0x9a, 0xa3 }, { 0x4f, 0xc1, 0xc9 } } }, // gradients
        { { { 0x6c, 0x52, 0xb8 }, { 0x9d, 0x86, 0xe0 } } }, // optimizer state
        { { { 0xe3, 0x7b, 0x22 }, { 0xf2, 0x9b, 0x4c } } }, // activations
        { { { 0xd9, 0xa4, 0x1b }, { 0xf0, 0xc8, 0x5a } } }, // temporaries
        { { { 0x4c, 0x9a, 0x3b }, { 0x7d, 0xc9, 0x6b } } }, // inputs
        { { { 0xc2, 0x40, 0x7a }, { 0xe0, 0x6f, 0xa0 } } }, // communication
        { { { 0x8c, 0x5a, 0x3c }, { 0xc0, 0x8a, 0x62 } } }, // kv cache
        { { { 0x9a, 0x9a, 0xa2 }, { 0x90, 0x90, 0x98 } } }, // unknown
    } };
    const auto index = static_cast<size_t>(category);
    if (index >= colors.size())
        return colors.back()[theme == Theme::Dark ? 1 : 0];
    return colors[index][theme == Theme::Dark ? 1 : 0];
}

} // namespace oomlens
