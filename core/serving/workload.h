#pragma once

#include "core/textinputs.h"

#include <optional>
#include <string>

namespace oomlens {

// What a pasted text shows of training, in words ("line 14: a frame in torch/optim/adamw.py"), or
// nothing when it shows none: a backward or an optimizer step (frames or the failure's phase), a
// trainer's frames or a script named for training, the training loop's own progress log, a
// trainable-parameter count, a recipe line that only training has (an optimizer, sharded training
// state, fp32 master weights, activation checkpointing). A dtype or autocast alone is not one:
// inference loads and runs its weights in a precision too. Read by the parser (an engine's lines
// beside training evidence are a training job's) and by the diagnosis (a text that shows neither
// training nor an inference run gets fixes that hold for both).
std::optional<std::string> textTrainingEvidence(const TextFindings& findings);

} // namespace oomlens
