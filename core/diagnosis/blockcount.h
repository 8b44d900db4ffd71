#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <string>

namespace oomlens {

// How many times the model repeats its block (transformer layer, residual stage), read from one
// forward pass: every layer allocates the same tensors from the same call site (the loop
// `for block in self.blocks: x = block(x)` is one line), so the allocation sites inside a block
// repeat N times with the same sizes while those outside it appear once.
struct BlockEstimate
{
    int blocks = 0; // 0: no clear repeating pattern
    std::string evidence; // "14 allocation sites repeat 12 times each in step 3's forward (1.20 GiB of 1.31 GiB)"
};

// Uses the forward pass of the step that failed, or of the latest earlier step when that
// forward is still incomplete at the failure (events up to untilEvent).
BlockEstimate estimateRepeatedBlocks(const DeviceAnalysis& device, int64_t untilEvent);

} // namespace oomlens
