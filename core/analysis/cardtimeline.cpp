#include "core/analysis/cardtimeline.h"

#include "core/units.h"

#include <algorithm>

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
        if (part.kind == CardBandKind::Allocated || part.kind == CardBandKind::CachedFree
            || part.kind == CardBandKind::Free)
            continue;
        band.parts.push_back(part);
        named += part.bytes;
    }
    if (band.parts.empty() || named != band.outsideBytes)
        band.parts
            = { { CardBandKind::OutsideAllocator, "Outside PyTorch (context, libraries, others)", band.outsideBytes } };
    band.label = "Outside PyTorch at the OOM, " + formatBytes(band.outsideBytes) + " (";
    for (size_t i = 0; i < band.parts.size(); ++i)
        band.label += (i ? "; " : "") + band.parts[i].label + " " + formatBytes(band.parts[i].bytes);
    band.label += ")";
    band.label += "; card total " + formatBytes(band.totalBytes) + " (" + band.totalSource + ")";
    band.label += "; one figure, drawn at that height over the whole run";
    return band;
}

std::optional<uint64_t> CardTimelineBand::outsideAt(int64_t event) const
{
    if (samples.empty())
        return outsideBytes;
    if (event < samples.front().event || event > samples.back().event)
        return std::nullopt;
    auto after = std::upper_bound(samples.begin(), samples.end(), event,
        [](int64_t at, const CardOutsideSample& sample) { return at < sample.event; });
    return (after - 1)->outsideBytes;
}

uint64_t CardTimelineBand::maxOutside() const
{
    uint64_t most = samples.empty() ? outsideBytes : 0;
    for (const CardOutsideSample& sample : samples)
        most = std::max(most, sample.outsideBytes);
    return most;
}

CardTimelineBand followOomFigures(CardTimelineBand band, const DeviceAnalysis& device)
{
    if (device.device != band.device)
        return band;
    std::vector<CardOutsideSample> samples;
    for (const OomAnalysis& oom : device.ooms) {
        // An oom entry without device_free (hand-made snapshots) or one that does not fit under
        // the total (another card, UVM) is no figure.
        if (oom.eventIndex < 0 || oom.deviceFreeBytes == 0 || oom.deviceFreeBytes + oom.reservedBytes > band.totalBytes)
            continue;
        samples.push_back({ oom.eventIndex, band.totalBytes - oom.deviceFreeBytes - oom.reservedBytes });
    }
    if (samples.size() < 2)
        return band;
    std::sort(samples.begin(), samples.end(),
        [](const CardOutsideSample& a, const CardOutsideSample& b) { return a.event < b.event; });
    band.samples = std::move(samples);
    uint64_t least = band.samples.front().outsideBytes;
    for (const CardOutsideSample& sample : band.samples)
        least = std::min(least, sample.outsideBytes);
    band.label = "Outside PyTorch at " + std::to_string(band.samples.size()) + " OOM events, "
        + (least == band.maxOutside() ? formatBytes(least)
                                      : formatBytes(least) + " to " + formatBytes(band.maxOutside()))
        + " (card total − free − reserved at each, drawn from the first to the last); card total "
        + formatBytes(band.totalBytes) + " (" + band.totalSource + ")";
    return band;
}

} // namespace oomlens
