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

std::optional<Rgb> phaseColor(Phase phase)
{
    switch (phase) {
    case Phase::Forward:
        return Rgb { 0xe3, 0x7b, 0x22 };
    case Phase::Backward:
        return Rgb { 0x2f, 0x6f, 0xb3 };
    case Phase::Optimizer:
        return Rgb { 0x6c, 0x52, 0xb8 };
    case Phase::Eval:
        return Rgb { 0x4c, 0x9a, 0x3b };
    case Phase::Load:
    case Phase::Data:
        return Rgb { 0x80, 0x80, 0x80 };
    case Phase::Rollout:
        return Rgb { 0x16, 0x9c, 0x9c };
    case Phase::Reference:
    case Phase::Reward:
        return Rgb { 0x7a, 0xa8, 0x2e };
    case Phase::WeightSync:
        return Rgb { 0xc0, 0x39, 0x6b };
    case Phase::Sleep:
    case Phase::Wake:
    case Phase::Offload:
    case Phase::Reload:
        return Rgb { 0x9a, 0x84, 0x5c };
    case Phase::Unknown:
        break;
    }
    return std::nullopt;
}

Rgb cardBandColor(CardBandKind kind)
{
    switch (kind) {
    case CardBandKind::Allocated:
        return { 0x2f, 0x6f, 0xb3 };
    case CardBandKind::CachedFree:
        return { 0x8a, 0x96, 0xa3 };
    case CardBandKind::ProcessOutsideAllocator:
        return { 0xd0, 0x8a, 0x1e };
    case CardBandKind::OtherProcesses:
        return { 0xc6, 0x28, 0x28 };
    case CardBandKind::Unattributed:
    case CardBandKind::OutsideAllocator:
        return { 0x9a, 0x9a, 0xa2 };
    case CardBandKind::Free:
        break;
    }
    return { 0xd5, 0xdb, 0xe3 };
}

Rgb markColor(Mark mark, Theme theme)
{
    const bool dark = theme == Theme::Dark;
    switch (mark) {
    case Mark::ReservedLine:
        return dark ? Rgb { 0xe0, 0xe0, 0xe6 } : Rgb { 0x30, 0x30, 0x38 };
    case Mark::PeakMarker:
        return dark ? Rgb { 0xff, 0xd0, 0x40 } : Rgb { 0xb0, 0x70, 0x00 };
    case Mark::OomMarker:
        return dark ? Rgb { 0xff, 0x6b, 0x6b } : Rgb { 0xc6, 0x28, 0x28 };
    case Mark::FreeBlock:
        break;
    }
    return dark ? Rgb { 0x3a, 0x3a, 0x42 } : Rgb { 0xe4, 0xe4, 0xea };
}

} // namespace oomlens
