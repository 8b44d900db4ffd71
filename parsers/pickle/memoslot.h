#pragma once

#include "parsers/pickle/picklevalue.h"

#include <cstdint>

namespace oomlens::pickle {

// How the native decoder keeps a memo slot in 64 bits: the value's kind + 1 in the top byte (0:
// the slot was never stored) and its id below. Values that carry more than an id (ints, floats,
// pairs...) live in the decoder's wide memo, tagged memoWideTag, the payload their index there.
// The first decoder, the second one of a split list and the join all read slots this way.
inline constexpr uint64_t memoWideTag = 0xff;
inline constexpr uint64_t memoPayloadMask = (uint64_t(1) << 56) - 1;

constexpr uint64_t memoTag(Kind kind)
{
    return uint64_t(static_cast<uint8_t>(kind)) + 1;
}

constexpr uint64_t memoTagOf(uint64_t slot)
{
    return slot >> 56;
}

constexpr uint64_t memoSlot(uint64_t tag, uint64_t payload)
{
    return (tag << 56) | payload;
}

} // namespace oomlens::pickle
