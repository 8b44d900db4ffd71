#pragma once

#include "core/analysis/cardreconciliation.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// The rest of the card at one moment of the trace: card total − free − reserved there.
struct CardOutsideSample
{
    int64_t event = -1; // index in the device's trace
    uint64_t outsideBytes = 0;
};

// The rest of the card on a memory-over-time chart. When an input gives the card's total (the
// OOM message, nvidia-smi, a capture sidecar), what the card held besides PyTorch's reserved
// memory — CUDA context, library kernels and workspaces, NCCL buffers, other processes — is one
// band stacked on the reserved curve, under a line at the card's total. Its height is what the
// inputs say and no more: with one figure (the gap reconciled at the OOM, cardreconciliation.h)
// one height over the whole run, which the label says; where the trace gives it at several
// moments (followOomFigures) a step from each figure to the next, between the first and the last.
struct CardTimelineBand
{
    int device = 0;
    uint64_t totalBytes = 0; // the card's capacity
    std::string totalSource; // "OOM message", "nvidia-smi", "capture sidecar"
    uint64_t outsideBytes = 0; // used − reserved at the OOM: the band's height
    std::vector<CardBand> parts; // what the band is made of, as far as the inputs tell; adds up to outsideBytes
    // Legend: "Outside PyTorch at the OOM, 4.00 GiB (This process outside PyTorch 1.50 GiB; Other
    // processes 2.50 GiB); card total 23.69 GiB (OOM message)".
    std::string label;
    // Figures over the trace, in event order; empty when there is only the one figure.
    std::vector<CardOutsideSample> samples;

    // The band's height after `event`: outsideBytes everywhere with one figure; with samples the
    // last figure at or before `event`, nothing before the first figure or after the last.
    std::optional<uint64_t> outsideAt(int64_t event) const;
    uint64_t maxOutside() const;
};

// Nothing when the card's total or the gap is unknown, or the gap is zero.
std::optional<CardTimelineBand> cardTimelineBand(const CardReconciliation& card);

// The band following the trace's own figures: each oom event of `device` records the card's free
// memory (device_free), so card total − device_free − reserved there is the rest of the card at
// that moment. With two or more such events the band follows them and its label says so; with
// fewer, or for another device, the band is returned unchanged.
CardTimelineBand followOomFigures(CardTimelineBand band, const DeviceAnalysis& device);

} // namespace oomlens
