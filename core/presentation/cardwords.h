#pragma once

#include "core/analysis/cardreconciliation.h"

#include <string_view>

namespace oomlens {

// The words for the card's three views (core/analysis/cardreconciliation.h).
// "PyTorch's allocator", "This process", "The card".
std::string_view cardViewLabel(CardFigure::View view);
// The JSON value of a view: "allocator", "process", "card".
std::string_view cardViewName(CardFigure::View view);

} // namespace oomlens
