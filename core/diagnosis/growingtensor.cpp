#include "core/diagnosis/growingtensor.h"

#include "core/diagnosis/snapshotevidence.h"
#include "core/units.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace oomlens {

namespace {

// Weights, gradients and optimizer state are made once and kept; a KV cache grows per token
// inside a generation, not once per step. None of them is a buffer re-made larger each step.
bool mayBeGrowingBuffer(const Allocation& allocation)
{
    return allocation.phase != Phase::Eval && allocation.category != Category::Parameters
        && allocation.category != Category::Gradients && allocation.category != Category::OptimizerState
        && allocation.category != Category::KvCache;
}

} // namespace

std::optional<GrowingTensor> findGrowingTensor(const DeviceAnalysis& device, int64_t untilEvent)
{
    // Each call stack's allocations in the order they were made.
    std::unordered_map<uint32_t, std::vector<const Allocation*>> bySite;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.olderThanTrace() || allocation.allocEvent > untilEvent || allocation.step < 0
            || allocation.stack == FrameTable::emptyStack() || !mayBeGrowingBuffer(allocation))
            continue;
        bySite[allocation.stack.value].push_back(&allocation);
    }
    std::optional<GrowingTensor> best;
    for (auto& [site, allocations] : bySite) {
        if (allocations.size() < 3)
            continue;
        std::sort(allocations.begin(), allocations.end(),
            [](const Allocation* a, const Allocation* b) { return a->allocEvent < b->allocEvent; });
        const Allocation* newest = allocations.back();
        if (!newest->liveAfter(untilEvent))
            continue;
        // Walk back while each earlier buffer from this site is the one the next replaced: made one
        // step before it, smaller, and still live when the next was made (the copy needs both).
        std::vector<const Allocation*> chain { newest };
        for (auto it = allocations.rbegin() + 1; it != allocations.rend(); ++it) {
            const Allocation* next = chain.back();
            const Allocation* previous = *it;
            if (previous->step != next->step - 1 || previous->requestedSize >= next->requestedSize
                || !previous->liveAfter(next->allocEvent))
                break;
            chain.push_back(previous);
        }
        if (chain.size() < 3)
            continue;
        std::vector<uint64_t> increments;
        for (size_t i = 0; i + 1 < chain.size(); ++i)
            increments.push_back(chain[i]->requestedSize - chain[i + 1]->requestedSize);
        // Appending the same batch's rows adds the same bytes each step; a tensor that scales with
        // a longer batch (the step's input, its logits, bound to a name until the next step rebinds
        // it) grows by whatever the lengths did.
        const auto [fewest, most] = std::minmax_element(increments.begin(), increments.end());
        if (*most > 2 * *fewest)
            continue;
        // A buffer that is appended to holds everything appended before the trace too: older growth
        // at least as large as what the trace shows. One that is mostly the growth in view is a
        // tensor sized by something else, not a pile.
        const uint64_t inView = newest->requestedSize - chain.back()->requestedSize;
        if (chain.back()->requestedSize < inView)
            continue;
        GrowingTensor found;
        found.stack = newest->stack;
        found.copies = static_cast<int>(chain.size());
        found.newestBytes = newest->requestedSize;
        found.perStepBytes = median(increments);
        found.oldestBytes = chain.back()->requestedSize;
        found.oldestEvent = chain.back()->allocEvent;
        found.newestEvent = newest->allocEvent;
        found.oldestStep = chain.back()->step;
        found.newestStep = newest->step;
        if (!best || found.newestBytes > best->newestBytes)
            best = found;
    }
    return best;
}

} // namespace oomlens
