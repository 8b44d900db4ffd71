#include "core/diagnosis/earlierstep.h"

#include "core/analysis/stackfeatures.h"

namespace oomlens {

uint64_t optimizerStateOfAnEarlierStep(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t untilEvent)
{
    StackFeatures features(snapshot);
    uint64_t bytes = 0;
    for (const Allocation& allocation : device.allocations) {
        if (!allocation.olderThanTrace() || allocation.category != Category::OptimizerState
            || allocation.phase != Phase::Optimizer || !allocation.liveAfter(untilEvent))
            continue;
        const uint32_t f = features.features(allocation.stack);
        if ((f & FeatureOptimizerInit) && !(f & FeatureLoad))
            bytes += allocation.requestedSize;
    }
    return bytes;
}

} // namespace oomlens
