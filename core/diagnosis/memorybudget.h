#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>
#include <string>

namespace oomlens {

// What was on the card when the run failed (or peaked), as far as the inputs tell: the bands
// come from a snapshot, the limits from the message or the snapshot's oom event. Projected
// savings and "fits afterwards" are computed against it; unknown parts stay unknown.
struct MemoryBudget {
    std::optional<CategoryBytes> bands;  // live by category at the failure
    uint64_t liveBytes = 0;              // live tensors at the failure (sum of bands when known)
    uint64_t request = 0;                // the failing request, 0 when judging a peak
    uint64_t fragmentedBytes = 0;        // reserved but not allocated: unusable while split
    std::optional<uint64_t> usableBytes; // what this process could hold: its reserve + free on the card
    uint64_t quadraticBytes = 0;         // O(seq²) buffers (attention scores) live at the failure
    int estimatedBlocks = 0;             // repeated layers, for checkpointing; 0 unknown
    int gpuCount = 0;                    // data-parallel ranks seen; 0 unknown

    uint64_t band(Category category) const { return bands ? (*bands)[static_cast<size_t>(category)] : 0; }
    uint64_t fixedStateBytes() const
    {
        return band(Category::Parameters) + band(Category::Gradients) + band(Category::OptimizerState);
    }
    uint64_t activationBytes() const { return band(Category::Activations); }

    // Bytes to spare (negative: still short) after saving `saving` bytes; keepsFragmentation
    // says whether the split blocks stay unusable after the fix.
    std::optional<int64_t> spareAfter(uint64_t saving, bool keepsFragmentation = true) const;
    // "it would fit with 1.10 GiB to spare" / "on its own it would still be 2.30 GiB short" / "" when unknown.
    std::string fitPhrase(uint64_t saving, bool keepsFragmentation = true) const;
};

} // namespace oomlens
