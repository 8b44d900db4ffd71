#pragma once

#include "core/analysis/cardbandkind.h"
#include "core/phase.h"

#include <cstdint>
#include <optional>
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

// The hue behind a phase on the timeline (drawn translucent): forward, backward and the optimizer in
// the hues of what they make (activations, parameters, optimizer state), evaluation in the inputs'
// green; an RL iteration's own stages in teal (generation), olive (reference and reward passes),
// rose (weight sync) and warm grey (moving memory). nullopt for Unknown: no tint.
std::optional<Rgb> phaseColor(Phase phase);

// The card bar: PyTorch's own memory in blues and greys, the rest in warning colours.
Rgb cardBandColor(CardBandKind kind);

// The timeline's lines and markers, and the allocator-state picture's free blocks.
enum class Mark : uint8_t { ReservedLine, PeakMarker, OomMarker, FreeBlock };
Rgb markColor(Mark mark, Theme theme);

} // namespace oomlens
