#pragma once

#include "core/phase.h"

#include <cstdint>
#include <string>

namespace oomlens {

// A colour as plain numbers, so core code (the HTML report) and the views (QColor) share one
// palette without core depending on Qt Gui.
struct Rgb
{
    uint8_t red = 0;
    uint8_t green = 0;
    uint8_t blue = 0;

    std::string hex() const; // "#6c52b8"
    friend bool operator==(const Rgb&, const Rgb&) = default;
};

enum class Theme : uint8_t { Light, Dark };

// Fixed state (parameters, gradients, optimizer) in cool tones, per-step memory in warm ones,
// so "what cannot shrink" reads as one block at a glance. The dark variants are lighter so the
// bands stay readable on a dark background.
Rgb categoryColor(Category category, Theme theme);

} // namespace oomlens
