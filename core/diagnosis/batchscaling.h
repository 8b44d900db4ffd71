#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/stepprofile.h"

#include <cstdint>
#include <optional>
#include <string>

namespace oomlens {

// Activations scale with the tokens of the batch (attention scores with their square); weights,
// gradients and optimizer state do not. So the same line of model code allocating more in the
// failing step than it did in earlier steps is a longer (or larger) batch, measured directly, and
// it needs no complete earlier step: an earlier step's tensors are seen by their allocation or,
// where a ring buffer dropped that, by their free (which carries the allocation's stack and size).
struct BatchScaling
{
    int matchedSites = 0; // call stacks allocating both in the failing step and before it
    int grownSites = 0; // of those, sites whose failing-step size is at least 1.5x the earlier largest
    double ratio = 1.0; // failing-step size over earlier size, the median weighted by failing-step bytes
    uint64_t largestNowBytes = 0; // the grown site with most bytes now, and what it allocated before
    uint64_t largestBeforeBytes = 0;
    int64_t largestNowEvent = -1;
    StackId largestStack = FrameTable::emptyStack();
    std::string largestWhere; // its innermost frame, "eager_attention_forward"
    // Dynamic bytes (activations, temporaries, inputs, unknown) live at the busiest moment of the
    // earlier steps the trace shows: a lower bound of their peak when the trace starts mid-step.
    uint64_t earlierPeakDynamic = 0;
};

// Compares the sizes per call stack in [failing.firstEvent, untilEvent] with every event before it.
// Frameless allocations (the autograd engine under stacks="python") carry no site and are left out.
std::optional<BatchScaling> measureBatchScaling(const Snapshot& snapshot, const DeviceAnalysis& device,
    const DeviceProfile& profile, const StepProfile& failing, int64_t untilEvent);

// What the allocator's cache says about the steps before the failing one, where the trace holds
// none of them whole. The caching allocator keeps every segment it reserved until empty_cache, an
// out-of-memory retry or the garbage-collection threshold releases it, so at the failing step's
// start the cache is the high-water mark of what earlier steps needed: their peak fit in what was
// reserved then, and each of their requests above 1 MiB fit in one of its segments (a block lives
// in one segment). A longer batch grows every tensor with a token dimension; its largest (the
// logits, the loss's fp32 copy, their gradients) outgrow every cached segment together, from
// several call sites, where one oversized tensor is one site.
struct CacheBeforeStep
{
    uint64_t reservedBytes = 0; // reserved right before the failing step's first event
    uint64_t largestSegment = 0; // the largest large-pool segment then
    int outgrowingSites = 0; // call stacks whose failing-step request is >= 1.5x that segment
    uint64_t largestRequest = 0; // the largest of those requests
    int64_t largestRequestEvent = -1;
};

// Null when the trace holds no event before the failing step.
std::optional<CacheBeforeStep> measureCacheBeforeStep(
    const Snapshot& snapshot, const DeviceAnalysis& device, const StepProfile& failing, int64_t untilEvent);

} // namespace oomlens
