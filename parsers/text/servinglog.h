#pragma once

#include "core/serving/servingrun.h"
#include "core/textinputs.h"

#include <optional>
#include <string_view>

namespace oomlens::text {

// The inference run a text shows, or nothing when it shows none (or shows training: a backward,
// an optimizer step, a trainer's frames or recipe lines make the run a training job, whose own
// rules apply). Which engine: its log prefixes ("(VllmWorker rank=N pid=…)", "(EngineCore_DP0
// pid=…)", "[TensorRT-LLM][ERROR]", TGI's text_generation_launcher, SGLang's "[… TP0]" lines),
// its module paths in the frames, its own messages; generate() by transformers' generation and
// cache frames; diffusers by its pipelines. `findings` holds what parseText found already (OOM
// messages, tracebacks, recipes).
std::optional<ServingRun> findServingRun(std::string_view input, const TextFindings& findings);

} // namespace oomlens::text
