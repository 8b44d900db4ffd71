#include "core/presentation/userframe.h"

#include "core/snapshot.h"

namespace oomlens {

bool isPythonFile(std::string_view filename)
{
    return filename.ends_with(".py");
}

bool isPyTorchFile(std::string_view filename)
{
    // co_filename is absolute (site-packages), relative to the working directory, or Windows.
    return filename.starts_with("torch/") || filename.starts_with("torch\\")
        || filename.find("/torch/") != std::string_view::npos || filename.find("\\torch\\") != std::string_view::npos;
}

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
        if (!isPyTorchFile(filename))
            return id;
        if (!python)
            python = id;
    }
    return python ? python : view[0];
}

} // namespace oomlens
