#pragma once

#include "core/snapshot.h"

#include <string>

namespace oomlens {

// Compares two snapshots by value: interned ids are resolved to their text, so two snapshots
// built with different string/frame tables compare equal when they say the same thing. On a
// difference, `diff` (if given) names the first one found, e.g. "traces[0].events[12].size: 512 vs 1024".
bool sameSnapshot(const Snapshot& a, const Snapshot& b, std::string* diff = nullptr);

} // namespace oomlens
