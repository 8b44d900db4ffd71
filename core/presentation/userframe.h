#pragma once

#include "core/ids.h"

#include <optional>
#include <string_view>

namespace oomlens {

class FrameTable;
class StringTable;

// True for a Python source file that belongs to PyTorch itself: a path with a `torch`
// directory ("torch/nn/modules/module.py", ".../site-packages/torch/optim/adam.py",
// "C:\...\torch\autograd\graph.py"). "mytorch/" or "pytorch_lightning/" are not PyTorch.
bool isPyTorchFile(std::string_view filename);
bool isPythonFile(std::string_view filename);
// Code torch.compile generated (Inductor's output code): a compiled region's allocations come from
// it, and with augment_with_fx_traces PyTorch 2.11 puts the model lines that produced each FX node
// right after its frame, so the user frame is found past it.
bool isCompilerGeneratedFile(std::string_view filename);

// The frame of a stack a reader recognises as their code: the innermost Python frame outside
// PyTorch's own package and torch.compile's generated code, else the innermost Python frame, else (a C++-only stack,
// such as the autograd engine's threads) the backward node or operator that ran, past the recorder and allocator
// frames that come first in stacks='all' recordings. nullopt for an empty or invalid
// stack. The app and the report both name allocations by this frame.
std::optional<FrameId> userFrame(const FrameTable& frames, const StringTable& strings, StackId stack);

} // namespace oomlens
