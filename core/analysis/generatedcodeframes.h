#pragma once

#include "core/ids.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace oomlens {

class FrameTable;
class StringTable;

// Which frames of one snapshot are torch.compile's generated code (isCompilerGeneratedFile,
// core/analysis/userframe.h), decided once per distinct file name: frames and stacks are
// interned, so a million allocations share a few thousand frames and far fewer file names.
// Walking a stack then reads one byte per frame, and a snapshot without generated code (the
// common case) walks none: any() is false and every lookup answers at once.
class GeneratedCodeFrames
{
public:
    GeneratedCodeFrames(const FrameTable& frames, const StringTable& strings);

    bool any() const { return m_any; }
    bool isGenerated(FrameId frame) const
    {
        return m_any && frame.value < m_generated.size() && m_generated[frame.value];
    }
    // The innermost generated-code frame of the stack, if any.
    std::optional<FrameId> innermost(StackId stack) const;

private:
    const FrameTable* m_frames;
    std::vector<uint8_t> m_generated; // by FrameId: 1 for a generated-code frame
    bool m_any = false;
};

} // namespace oomlens
