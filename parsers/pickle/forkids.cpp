#include "parsers/pickle/forkids.h"

#include <algorithm>

namespace oomlens::pickle {

ForkIds ForkIds::at(const DecodedRecords& builder)
{
    ForkIds ids;
    ids.m_stringsKnown = static_cast<uint32_t>(builder.strings->size());
    ids.m_framesKnown = static_cast<uint32_t>(builder.frames->frameCount());
    ids.m_stacksKnown = static_cast<uint32_t>(builder.frames->stackCount());
    ids.m_poolsKnown = builder.entryPools.size();
    return ids;
}

void ForkIds::adopt(const DecodedRecords& fork, DecodedRecords& into)
{
    const StringTable& strings = *fork.strings;
    for (auto id = m_stringsKnown; id < strings.size(); ++id)
        m_strings.push_back(into.strings->intern(strings.get(StringId(id))).value);
    const FrameTable& frames = *fork.frames;
    for (auto id = m_framesKnown; id < frames.frameCount(); ++id) {
        Frame frame = frames.frame(FrameId(id));
        frame.filename = StringId(string(frame.filename.value));
        frame.name = StringId(string(frame.name.value));
        m_frames.push_back(into.frames->intern(frame).value);
    }
    std::vector<FrameId> stack;
    for (auto id = m_stacksKnown; id < frames.stackCount(); ++id) {
        stack.clear();
        for (const FrameId frame : frames.stack(StackId(id)))
            stack.push_back(FrameId(this->frame(frame.value)));
        m_stacks.push_back(into.frames->internStack(stack.data(), stack.size()).value);
    }
    // Entry pools by value: the builder may have met new ones meanwhile too.
    m_pools.assign(fork.entryPools.size() + 1, 0);
    for (size_t i = 0; i < fork.entryPools.size(); ++i) {
        if (i < m_poolsKnown) {
            m_pools[i + 1] = static_cast<uint16_t>(i + 1);
            continue;
        }
        const auto it = std::find(into.entryPools.begin(), into.entryPools.end(), fork.entryPools[i]);
        if (it == into.entryPools.end())
            into.entryPools.push_back(fork.entryPools[i]);
        const auto at = it == into.entryPools.end() ? into.entryPools.size() - 1 : size_t(it - into.entryPools.begin());
        m_pools[i + 1] = static_cast<uint16_t>(at + 1);
    }
}

void ForkIds::renumber(std::vector<TraceEvent>& events) const
{
    const auto text = [&](StringId id) { return id.isValid() ? StringId(string(id.value)) : id; };
    for (TraceEvent& e : events) {
        e.stack = StackId(stack(e.stack.value));
        e.compileContext = text(e.compileContext);
        e.userMetadata = text(e.userMetadata);
        e.pool = m_pools[e.pool];
    }
}

} // namespace oomlens::pickle
