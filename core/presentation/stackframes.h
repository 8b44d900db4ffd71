#pragma once

#include "core/ids.h"

#include <string>
#include <vector>

namespace oomlens {

struct Snapshot;

// The user's frames of a stack, innermost first, as frameText (core/analysis/userframe.h): the Python frames outside
// PyTorch's own package, else the one userFrame() (core/analysis/userframe.h) names; empty for
// an allocation without a recorded stack. What stays the same between two runs of one script,
// and what a reader recognises as their code: compare matches sites by it, `oomlens mcp` shows it.
std::vector<std::string> userFrameTexts(const Snapshot& snapshot, StackId stack);

// Every frame of a stack, innermost first, as frameText.
std::vector<std::string> allFrameTexts(const Snapshot& snapshot, StackId stack);

} // namespace oomlens
