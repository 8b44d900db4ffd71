#include "core/diagnosis/memorybudget.h"

#include "core/units.h"

namespace oomlens {

std::optional<int64_t> MemoryBudget::spareAfter(uint64_t liveSaving, bool recoversFragmentation) const
{
    if (!usableBytes || liveBytes == 0)
        return std::nullopt;
    const uint64_t live = liveBytes > liveSaving ? liveBytes - liveSaving : 0;
    const uint64_t blocked = recoversFragmentation ? 0 : fragmentedBytes;
    return static_cast<int64_t>(*usableBytes) - static_cast<int64_t>(live + request + blocked);
}

std::string MemoryBudget::fitPhrase(uint64_t liveSaving, bool recoversFragmentation) const
{
    const auto spare = spareAfter(liveSaving, recoversFragmentation);
    if (!spare)
        return {};
    if (*spare >= 0)
        return "it would fit with " + formatBytes(static_cast<uint64_t>(*spare)) + " to spare";
    return "on its own it would still be " + formatBytes(static_cast<uint64_t>(-*spare)) + " short";
}

} // namespace oomlens
