#pragma once

#include "core/analysis/framewords.h"
#include "core/ids.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

class FrameTable;
class StringTable;
struct Snapshot;

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
