#include "core/analysis/userframe.h"

#include "core/snapshot.h"

namespace oomlens {

namespace {

// The memory recorder (stacks='all' unwinds from inside it), the allocator and the plumbing that
// makes an empty tensor for any operator: innermost in every C++ stack, telling nothing of the work.
bool isAllocationMachinery(std::string_view name)
{
    return name.starts_with("torch::unwind::") || name.starts_with("torch::CapturedTraceback::")
        || name.find("gather_with_cpp") != std::string_view::npos || name.starts_with("c10::")
        || name.starts_with("at::detail::empty") || name.starts_with("at::native::empty")
        || name.find("create_out(") != std::string_view::npos;
}

// A stack without Python frames: the autograd engine's own threads run backward in C++, and C++
// extensions allocate there too. The backward node that ran ("NllLossBackward0::apply") names the
// work, else the operator called ("at::_ops::mm::call"), else the innermost frame outside the
// allocation machinery, else the innermost frame.
FrameId nativeWorkFrame(const FrameTable& frames, const StringTable& strings, FrameTable::StackView view)
{
    std::optional<FrameId> op;
    std::optional<FrameId> outsideMachinery;
    for (FrameId id : view) {
        const std::string_view name = strings.get(frames.frame(id).name);
        if (name.starts_with("torch::autograd::generated::") && name.find("::apply(") != std::string_view::npos)
            return id;
        if (!op && name.starts_with("at::_ops::") && name.find("::call(") != std::string_view::npos)
            op = id;
        if (!outsideMachinery && !isAllocationMachinery(name))
            outsideMachinery = id;
    }
    return op ? *op : outsideMachinery ? *outsideMachinery : view[0];
}

} // namespace

std::optional<FrameId> userFrame(const FrameTable& frames, const StringTable& strings, StackId stack)
{
    const FrameTable::StackView view = frames.stack(stack);
    if (view.empty())
        return std::nullopt;
    std::optional<FrameId> python;
    for (FrameId id : view) {
        const std::string_view filename = strings.get(frames.frame(id).filename);
        if (!isPythonFile(filename))
            continue;
        if (!isPyTorchFile(filename) && !isCompilerGeneratedFile(filename))
            return id;
        if (!python)
            python = id;
    }
    return python ? *python : nativeWorkFrame(frames, strings, view);
}

std::string frameLabel(const FrameTable& frames, const StringTable& strings, FrameId id, FramePath path)
{
    const Frame& frame = frames.frame(id);
    std::string_view file = strings.get(frame.filename);
    if (path == FramePath::FileName) {
        const size_t slash = file.find_last_of('/');
        if (slash != std::string_view::npos)
            file = file.substr(slash + 1);
    }
    return std::string(strings.get(frame.name)) + " (" + std::string(file) + ":" + std::to_string(frame.line) + ")";
}

std::string userFrameLabel(const Snapshot& snapshot, StackId stack)
{
    if (!snapshot.frames || !snapshot.strings || !stack.isValid() || stack.value >= snapshot.frames->stackCount())
        return {};
    const std::optional<FrameId> frame = userFrame(*snapshot.frames, *snapshot.strings, stack);
    return frame ? frameLabel(*snapshot.frames, *snapshot.strings, *frame) : std::string();
}

std::string frameText(const Snapshot& snapshot, FrameId id)
{
    const Frame& frame = snapshot.frames->frame(id);
    return std::string(snapshot.strings->get(frame.filename)) + ':' + std::to_string(frame.line) + ':'
        + std::string(snapshot.strings->get(frame.name));
}

std::string frameSiteText(const Snapshot& snapshot, FrameId id)
{
    const Frame& frame = snapshot.frames->frame(id);
    return std::string(snapshot.strings->get(frame.filename)) + ":" + std::to_string(frame.line) + " "
        + std::string(snapshot.strings->get(frame.name));
}

} // namespace oomlens
