#pragma once

#include "parsers/pickle/picklevalue.h"

#include <atomic>
#include <string_view>

namespace oomlens::pickle {

// Feeds a JSON conversion of a snapshot (json.dump of the same dict/list) into the builder the
// pickle decoders use, through nlohmann's SAX interface: no JSON DOM is built.
// Throws DecodeError with the byte offset of a syntax error.
Value readJsonValue(std::string_view text, ValueBuilder& builder, const std::atomic_bool* cancel);

} // namespace oomlens::pickle
