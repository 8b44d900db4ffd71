#include "core/presentation/stackframes.h"

#include "core/analysis/userframe.h"
#include "core/snapshot.h"

namespace oomlens {

std::vector<std::string> userFrameTexts(const Snapshot& snapshot, StackId stack)
{
    std::vector<std::string> frames;
    for (FrameId id : snapshot.frames->stack(stack)) {
        const std::string_view filename = snapshot.strings->get(snapshot.frames->frame(id).filename);
        if (isPythonFile(filename) && !isPyTorchFile(filename))
            frames.push_back(frameText(snapshot, id));
    }
    if (frames.empty()) {
        if (const std::optional<FrameId> frame = userFrame(*snapshot.frames, *snapshot.strings, stack))
            frames.push_back(frameText(snapshot, *frame));
    }
    return frames;
}

std::vector<std::string> allFrameTexts(const Snapshot& snapshot, StackId stack)
{
    std::vector<std::string> frames;
    for (FrameId id : snapshot.frames->stack(stack))
        frames.push_back(frameText(snapshot, id));
    return frames;
}

} // namespace oomlens
