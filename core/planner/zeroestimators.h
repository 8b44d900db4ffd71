#pragma once

#include <cstdint>

namespace oomlens::planner {

// DeepSpeed's own model-state estimators, as published in deepspeed/runtime/zero
// (estimate_zero2_model_states_mem_needs in stage_1_and_2.py, estimate_zero3_model_states_mem_needs
// in stage3.py): mixed precision with Adam, model states only (no activations, no buffers).
// `cpuBytes` is per node and carries DeepSpeed's additional_buffer_factor (1.5 by default).
// The planner's bands add up to `gpuBytes` for the set-ups these functions describe; the tests
// hold both to the published numbers.
struct ZeroEstimate
{
    uint64_t gpuBytes = 0;
    uint64_t cpuBytes = 0;
};

// Stages 1 and 2 share one estimator. Without offload each GPU keeps the 16-bit parameters
// whole and 1/N of 18 bytes per parameter: 16-bit gradients, fp32 gradients, fp32 master
// weights and Adam's two fp32 moments (2·P + 18·P/N). With the optimizer offloaded only the
// 16-bit parameters stay (2·P). Older releases, and the examples in DeepSpeed's documentation, print
// 4·P + 16·P/N: the 16-bit gradients counted whole, which is what stage 1 keeps.
ZeroEstimate deepSpeedZero2Estimate(
    uint64_t parameters, int gpusPerNode, int nodes, bool offloadOptimizer, double bufferFactor = 1.5);

// Stage 3: every model state is sharded, 18·P/N, plus the largest single module gathered whole
// in fp32 (4 bytes per parameter of it). Offloading the optimizer leaves the 16-bit parameter
// shard (2·P/N); offloading parameters too leaves only the gather buffer.
ZeroEstimate deepSpeedZero3Estimate(uint64_t parameters, uint64_t largestLayerParameters, int gpusPerNode, int nodes,
    bool offloadOptimizer, bool offloadParameters, bool zeroInit = true, double bufferFactor = 1.5);

} // namespace oomlens::planner
