#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlens {

// Who holds a slice of the card's capacity (CardBand, CardTimelineBand::parts), left to right.
enum class CardBandKind : uint8_t {
    Allocated, // tensors PyTorch's allocator handed out
    CachedFree, // reserved by the allocator, not allocated
    ProcessOutsideAllocator, // this process beyond PyTorch's allocator (context, libraries)
    OtherProcesses,
    Unattributed, // used on the card, not attributed to a listed process
    Free,
    OutsideAllocator, // everything outside PyTorch's allocator, when the inputs cannot split it
};

// The JSON's bands[].key: "allocated", "cached_free", "process_outside_allocator", "other_processes",
// "unattributed", "free", "outside_allocator".
std::string_view cardBandName(CardBandKind kind);
std::optional<CardBandKind> cardBandFromName(std::string_view name);

} // namespace oomlens
