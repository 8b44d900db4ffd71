#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>
#include <string>

namespace oomlens {

// What was on the card when the run failed (or peaked), as far as the inputs tell: the bands
// come from a snapshot, the limits from the message or the snapshot's oom event. Projected
// savings and "fits afterwards" are computed against it; unknown parts stay unknown.
//
// The model, in bytes this process can use:
//     usable = reserved + free on the card          (other processes and the CUDA context are outside)
//     need   = live + request + blocked
//     spare  = usable − need
// where `blocked` is the cache that is reserved but unallocated and, being split, cannot take the
// request. A fix either frees live tensors (smaller batch, bf16, checkpointing, sharding, ...),
// which lowers `live`, or makes the split cache usable (expandable segments), which drops
// `blocked`; never both. Before any fix spare = free − request, which is negative at an OOM.
struct MemoryBudget
{
    std::optional<CategoryBytes> bands; // live by category at the failure
    uint64_t liveBytes = 0; // live tensors at the failure (sum of bands when known)
    uint64_t request = 0; // the failing request, 0 when judging a peak
    uint64_t fragmentedBytes = 0; // reserved but not allocated: unusable while split
    std::optional<uint64_t> usableBytes; // what this process could hold: its reserve + free on the card
    uint64_t quadraticBytes = 0; // O(seq²) buffers (attention scores) live at the failure
    int estimatedBlocks = 0; // repeated layers, for checkpointing; 0 unknown
    std::string blocksEvidence; // how estimatedBlocks was found ("12 repeats of ... in forward")
    int gpuCount = 0; // data-parallel ranks seen; 0 unknown
    std::string gpuCountEvidence; // where gpuCount comes from ("[rank0]..[rank3] prefixes in the log")

    uint64_t band(Category category) const { return bands ? (*bands)[static_cast<size_t>(category)] : 0; }
    uint64_t fixedStateBytes() const
    {
        return band(Category::Parameters) + band(Category::Gradients) + band(Category::OptimizerState);
    }
    uint64_t activationBytes() const { return band(Category::Activations); }

    // Bytes to spare (negative: still short) once `liveSaving` bytes of live tensors are gone,
    // or, with recoversFragmentation, once the split cache is usable again (nothing live freed).
    std::optional<int64_t> spareAfter(uint64_t liveSaving, bool recoversFragmentation = false) const;
    // "it would fit with 1.10 GiB to spare" / "on its own it would still be 2.30 GiB short" / "" when unknown.
    std::string fitPhrase(uint64_t liveSaving, bool recoversFragmentation = false) const;
};

} // namespace oomlens
