#pragma once

#include "core/textinputs.h"

#include <vector>

namespace oomlens::text {

class TextLines;

// One line of a log that says how the run trains: "Using fused AdamW, lr=1e-5, bf16 autocast, fp32
// weights", HF TrainingArguments ("bf16=True", "optim=adamw_torch_fused"), Lightning ("Using bf16
// Automatic Mixed Precision (AMP)", precision "bf16-true"), a model loaded with
// "torch_dtype=torch.bfloat16", DeepSpeed's ZeRO stage and optimizer lines.
struct RecipeLine
{
    TrainingRecipe said; // only what this line says; its evidence is the line itself
    size_t lineIndex = 0;
};

std::vector<RecipeLine> findRecipeLines(const TextLines& lines);

// The recipe as the lines before `lineIndex` left it (a later line overrides what an earlier one set),
// completed with what the traceback's frames show ran: torch/optim/adamw.py is AdamW, _fused_adamw fused.
TrainingRecipe recipeBefore(
    const std::vector<RecipeLine>& lines, size_t lineIndex, const std::optional<TracebackInfo>& traceback);

} // namespace oomlens::text
