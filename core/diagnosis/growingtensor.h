#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>

namespace oomlens {

// One tensor whose size grows every training step: `buf = torch.cat([buf, new])` on a queue of
// negatives, a history, a running list of embeddings that is never trimmed. torch.cat cannot grow
// a tensor in place: it allocates a new buffer as large as both inputs, copies them in, and only
// then is the old buffer's last reference dropped and its block freed. In the trace that is a
// chain of allocations from one call stack, one per step in consecutive steps, each larger than
// the one before and made while it was still live, the newest live at the failure. No tensor
// outlives its step, so comparing what stays live finds nothing; the live set still grows by the
// increment every step, which is a leak by size.
struct GrowingTensor
{
    StackId stack = FrameTable::emptyStack();
    int copies = 0; // buffers in the chain, the newest included
    uint64_t newestBytes = 0; // the newest buffer, live at the failure
    uint64_t perStepBytes = 0; // the median increment from one step's buffer to the next
    uint64_t oldestBytes = 0;
    int64_t oldestEvent = -1;
    int64_t newestEvent = -1;
    int32_t oldestStep = -1;
    int32_t newestStep = -1;
};

// The largest such chain among training allocations up to `untilEvent` (inclusive), at least
// three buffers long (two increments seen), its increments alike (the same rows appended each
// step, none more than twice another) and its oldest copy at least as large as the growth in view
// (an appended buffer holds all it was given before); nullopt when there is none. Evaluation is left out:
// outputs gathered across evaluation batches are eval_accumulation's (snapshotevalaccumulation.cpp).
std::optional<GrowingTensor> findGrowingTensor(const DeviceAnalysis& device, int64_t untilEvent);

} // namespace oomlens
