#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oomlens::pickle {

// Standard base64 (RFC 4648, '+' and '/') as memory_viz pages embed a snapshot: nullopt on any
// byte outside the alphabet, or on '=' anywhere but as the one or two last bytes of a length
// that is a multiple of four. Unpadded input is accepted; bits short of a whole byte are dropped.
std::optional<std::string> decodeBase64(std::string_view encoded);

} // namespace oomlens::pickle
