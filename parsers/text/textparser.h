#pragma once

#include "core/case.h"
#include "core/textinputs.h"

#include <string_view>

namespace oomlens {

// Finds every OOM message (with its traceback), memory_summary table, nvidia-smi table and
// allocator setting in a piece of text: a paste, a file, or a whole training log.
TextFindings parseText(std::string_view text);

// The JSON contract's kind for a text input: oom_message, memory_summary, traceback,
// nvidia_smi, or log when it mixes several or holds none on its own.
InputKind classifyText(std::string_view text, const TextFindings& findings);

} // namespace oomlens
