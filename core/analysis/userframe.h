#pragma once

#include "core/ids.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

class FrameTable;
class StringTable;
struct Snapshot;

// True for a Python source file that belongs to PyTorch itself: a path with a `torch`
// directory ("torch/nn/modules/module.py", ".../site-packages/torch/optim/adam.py",
// "C:\...\torch\autograd\graph.py"). "mytorch/" or "pytorch_lightning/" are not PyTorch.
bool isPyTorchFile(std::string_view filename);
bool isPythonFile(std::string_view filename);
// A file of an installed package, a framework's code rather than the program's: a path through
// site-packages or dist-packages (pip, conda, Debian's python3-*), with either separator.
bool isInstalledPackageFile(std::string_view filename);
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

// A frame in words, each form written here once.
// The label a sentence and a table use: "forward (model.py:42)"; FileName keeps only the last
// path component, for the app's narrow columns.
enum class FramePath : uint8_t { Full, FileName };
std::string frameLabel(
    const FrameTable& frames, const StringTable& strings, FrameId frame, FramePath path = FramePath::Full);
// The user frame's label, empty when the stack has none (or the snapshot no frames).
std::string userFrameLabel(const Snapshot& snapshot, StackId stack);
// As the JSON names a frame of a stack: "model.py:42:forward" (`oomlens mcp`, compare's sites).
std::string frameText(const Snapshot& snapshot, FrameId frame);
// As the report and the JSON name an allocation site: "model.py:42 forward".
std::string frameSiteText(const Snapshot& snapshot, FrameId frame);

} // namespace oomlens
