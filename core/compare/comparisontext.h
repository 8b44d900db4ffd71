#pragma once

#include "core/compare/comparison.h"

#include <cstddef>
#include <string>

namespace oomlens {

// `oomlens compare` without --json: the two peaks side by side, the categories at the peak (and
// at the OOM), the `topSites` sites that changed most, new and vanished sites, the leak check of
// two windows, and the summary sentence last.
std::string comparisonToText(const Comparison& comparison, size_t topSites = 15);

} // namespace oomlens
