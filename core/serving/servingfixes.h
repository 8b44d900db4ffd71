#pragma once

#include "core/diagnosis.h"
#include "core/serving/servingview.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// The inference ladder for one cause, each rung with the engine's own knob and, where the log's
// figures allow, a projection in tokens and bytes. The order follows the cost of the change:
// fewer sequences or batched tokens first, then a shorter context (changes what is served), the
// utilisation share (only as far as the card's free memory allows), eager mode or fewer graph
// sizes, an fp8 KV cache (changes numerics), quantised weights (changes the model), tensor
// parallelism over more GPUs, CPU offload (slow). The cause's own rung comes first.
// generate() gets its own rungs (batch, beams and new tokens; the cache's form; SDPA), diffusers
// its own (CPU offload, VAE slicing and tiling, attention slicing, a lower resolution).
// `request`: the failing request of the OOM message, where there is one.
std::vector<Fix> servingLadder(DiagnosisId cause, const ServingView& view, std::optional<uint64_t> request = {});

// Whether a fix belongs to training only (micro-batch and accumulation, autocast, activation
// checkpointing, ZeRO and FSDP, LoRA, the optimizer's state and the evaluation loop): never
// offered for an inference run.
bool isTrainingFix(FixKind kind);

// For a run whose input shows neither training nor inference, in place of the rungs of only one of
// them: fewer samples per forward, worded so that it holds for both.
Fix smallerBatchRung();

// "16,384".
std::string tokensText(double tokens);
// A setting as the engine printed it: a count with separators ("32,768"), a fraction as is ("0.9").
std::string settingText(double value);

} // namespace oomlens
