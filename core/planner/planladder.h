#pragma once

#include "core/planner/memoryplan.h"

#include <string>
#include <vector>

namespace oomlens::planner {

// One rung of the fix ladder (README: micro-batch → bf16 → checkpointing → SDPA → 8-bit
// optimizer → ZeRO → offload → TP → PP → EP → LoRA/QLoRA; serving: fp8 KV cache → quantized
// weights → TP) applied to a planned set-up. The ids are the
// diagnosis' fix ids, so a plan and a diagnosis name the same change the same way.
struct LadderRung
{
    std::string
        id; // "micro_batch", "bf16", "checkpointing", "sdpa", "optimizer_8bit", "zero", "offload",
            // "tensor_parallel", "pipeline_parallel", "expert_parallel", "lora", "kv_cache_fp8", "quantize_weights"
    std::string change; // "micro-batch 8 -> 4, accumulate 2"
    TrainingSetup alone; // the planned set-up with this rung only
    uint64_t aloneTotal = 0;
    TrainingSetup climbed; // with this rung and every applicable rung before it
    uint64_t climbedTotal = 0;
    bool changesExperiment = false; // LoRA trains different weights
};

// The rungs that change something for this set-up, in ladder order. Climbing stops at the first
// rung whose climbed set-up fits `capacityBytes`; rungs already in place are skipped. ZeRO needs
// more than one GPU; offload is tried on top of ZeRO-2 (or ZeRO-3 when that is the set-up).
// `total` prices a set-up: the formula, or projections from a measured run.
std::vector<LadderRung> climbLadder(
    const ModelSpec& model, const TrainingSetup& setup, uint64_t capacityBytes, const PlanTotal& total);

} // namespace oomlens::planner
