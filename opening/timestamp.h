#pragma once

#include <string>

namespace oomlens {

// Now, in UTC, to the second, as a report's "generated at" line says it: "2026-11-29T09:38:04Z".
std::string utcTimestampNow();

} // namespace oomlens
