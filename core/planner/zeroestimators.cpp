#include "core/planner/zeroestimators.h"
#include "core/planner/modelstates.h"

#include <algorithm>

namespace oomlens::planner {

ZeroEstimate deepSpeedZero2Estimate(
    uint64_t parameters, int gpusPerNode, int nodes, bool offloadOptimizer, double bufferFactor)
{
    const double p = static_cast<double>(parameters);
    const int gpus = gpusPerNode * nodes;
    ZeroEstimate estimate;
    if (offloadOptimizer) {
        estimate.gpuBytes = 2 * parameters;
        estimate.cpuBytes = saturatedBytes(p * std::max(4.0 * gpus, 16.0) * bufferFactor);
    } else {
        estimate.gpuBytes = 2 * parameters + saturatedBytes(18 * p / gpus);
        estimate.cpuBytes = saturatedBytes(p * 4 * gpusPerNode * bufferFactor);
    }
    return estimate;
}

ZeroEstimate deepSpeedZero3Estimate(uint64_t parameters, uint64_t largestLayerParameters, int gpusPerNode, int nodes,
    bool offloadOptimizer, bool offloadParameters, bool zeroInit, double bufferFactor)
{
    const double p = static_cast<double>(parameters);
    const int gpus = gpusPerNode * nodes;
    const double perNode = 1.0 / nodes; // host memory is per node: each holds its nodes' shards
    const uint64_t gatherBuffer = 4 * largestLayerParameters;
    ZeroEstimate estimate;
    if (offloadOptimizer && offloadParameters) {
        estimate.gpuBytes = gatherBuffer;
        const double factor = zeroInit ? 18 * perNode : std::max(4.0 * gpusPerNode, 18 * perNode);
        estimate.cpuBytes = saturatedBytes(p * factor * bufferFactor);
    } else if (offloadOptimizer) {
        estimate.gpuBytes = gatherBuffer + saturatedBytes(2 * p / gpus);
        const double factor = zeroInit ? 16 * perNode : std::max(4.0 * gpusPerNode, 16 * perNode);
        estimate.cpuBytes = saturatedBytes(p * factor * bufferFactor);
    } else {
        estimate.gpuBytes = gatherBuffer + saturatedBytes(18 * p / gpus);
        estimate.cpuBytes = zeroInit
            ? saturatedBytes(static_cast<double>(largestLayerParameters) * 4 * gpusPerNode * bufferFactor)
            : saturatedBytes(p * 4 * gpusPerNode * bufferFactor);
    }
    return estimate;
}

} // namespace oomlens::planner
