#include "core/presentation/cardtimeline.h"

#include "core/units.h"

namespace oomlens {

std::optional<CardTimelineBand> cardTimelineBand(const CardReconciliation& card)
{
    const CardFigure* total = card.figure("card_total");
    if (!card.available() || !total || !total->bytes || !card.restOfCardBytes || *card.restOfCardBytes == 0)
        return std::nullopt;
    CardTimelineBand band;
    band.device = card.device;
    band.totalBytes = *total->bytes;
    band.totalSource = total->source;
    band.outsideBytes = *card.restOfCardBytes;
    // The card's capacity by holder, without PyTorch's own slices and the free memory.
    uint64_t named = 0;
    for (const CardBand& part : card.bands) {
        if (part.key == "allocated" || part.key == "cached_free" || part.key == "free")
            continue;
        band.parts.push_back(part);
        named += part.bytes;
    }
    if (band.parts.empty() || named != band.outsideBytes)
        band.parts = { { "outside_allocator", "Outside PyTorch (context, libraries, others)", band.outsideBytes } };
    band.label = "Outside PyTorch at the OOM, " + formatBytes(band.outsideBytes) + " (";
    for (size_t i = 0; i < band.parts.size(); ++i)
        band.label += (i ? "; " : "") + band.parts[i].label + " " + formatBytes(band.parts[i].bytes);
    band.label += ")";
    band.label += "; card total " + formatBytes(band.totalBytes) + " (" + band.totalSource + ")";
    return band;
}

} // namespace oomlens
