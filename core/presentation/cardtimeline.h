#pragma once

#include "core/presentation/cardreconciliation.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// The rest of the card on a memory-over-time chart. When an input gives the card's total (the
// OOM message, nvidia-smi, a capture sidecar), what the card held besides PyTorch's reserved
// memory — CUDA context, library kernels and workspaces, NCCL buffers, other processes — is one
// band stacked on the reserved curve, under a line at the card's total. Its height is the gap
// reconciled at the OOM (cardreconciliation.h): contexts and libraries load early and stay, so
// it stands for the whole run; other processes may have come and gone, which the label says.
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
};

// Nothing when the card's total or the gap is unknown, or the gap is zero.
std::optional<CardTimelineBand> cardTimelineBand(const CardReconciliation& card);

} // namespace oomlens
