#include "core/analysis/cardbandkind.h"

#include "core/nametable.h"

namespace oomlens {

namespace {

constexpr NameTable<CardBandKind, 7> cardBandNames { {
    { CardBandKind::Allocated, "allocated" },
    { CardBandKind::CachedFree, "cached_free" },
    { CardBandKind::ProcessOutsideAllocator, "process_outside_allocator" },
    { CardBandKind::OtherProcesses, "other_processes" },
    { CardBandKind::Unattributed, "unattributed" },
    { CardBandKind::Free, "free" },
    { CardBandKind::OutsideAllocator, "outside_allocator" },
} };

} // namespace

std::string_view cardBandName(CardBandKind kind)
{
    return nameIn(cardBandNames, kind);
}

std::optional<CardBandKind> cardBandFromName(std::string_view name)
{
    return valueNamed(cardBandNames, name);
}

} // namespace oomlens
