#include "core/analysis/generatedcodeframes.h"

#include "core/analysis/userframe.h"
#include "core/snapshot.h"

namespace oomlens {

GeneratedCodeFrames::GeneratedCodeFrames(const FrameTable& frames, const StringTable& strings)
    : m_frames(&frames)
{
    // By file name id: 0 not decided yet, 1 not generated, 2 generated.
    std::vector<uint8_t> byFilename(strings.size(), 0);
    m_generated.assign(frames.frameCount(), 0);
    for (uint32_t id = 0; id < frames.frameCount(); ++id) {
        const StringId filename = frames.frame(FrameId(id)).filename;
        if (!filename.isValid() || filename.value >= byFilename.size())
            continue;
        uint8_t& decided = byFilename[filename.value];
        if (decided == 0)
            decided = isCompilerGeneratedFile(strings.get(filename)) ? 2 : 1;
        if (decided == 2) {
            m_generated[id] = 1;
            m_any = true;
        }
    }
}

std::optional<FrameId> GeneratedCodeFrames::innermost(StackId stack) const
{
    if (!m_any || !stack.isValid())
        return std::nullopt;
    for (FrameId id : m_frames->stack(stack)) {
        if (m_generated[id.value])
            return id;
    }
    return std::nullopt;
}

} // namespace oomlens
