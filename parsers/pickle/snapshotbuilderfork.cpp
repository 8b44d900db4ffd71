#include "parsers/pickle/snapshotbuilder.h"

#include "core/pagemove.h"

#include <algorithm>
#include <limits>

// SnapshotBuilder's fork for a second decoder (nativeunpicklersplit.cpp): made from a builder in
// the middle of a trace list, it reads the list's later items on another thread; the builder then
// takes its trace entries over and renumbers the ids it made.

namespace oomlens::pickle {

std::unique_ptr<SnapshotBuilder> SnapshotBuilder::forkForItems() const
{
    auto fork = std::make_unique<SnapshotBuilder>();
    fork->m_strings = std::make_shared<StringTable>(*m_strings);
    fork->m_frames = std::make_shared<FrameTable>(*m_frames);
    fork->m_stackSlots = m_stackSlots;
    fork->m_stackHashes = m_stackHashes;
    fork->m_stackCached = m_stackCached;
    fork->m_entryPools = m_entryPools;
    fork->m_warned = m_warned;
    fork->m_warnedIds = m_warnedIds;
    fork->m_emptyString = m_emptyString;
    fork->m_forkedAt.stringsKnown = static_cast<uint32_t>(m_strings->size());
    fork->m_forkedAt.framesKnown = static_cast<uint32_t>(m_frames->frameCount());
    fork->m_forkedAt.stacksKnown = static_cast<uint32_t>(m_frames->stackCount());
    fork->m_entryPoolsKnown = m_entryPools.size();
    return fork;
}

bool SnapshotBuilder::canAdopt(uint32_t list, const SnapshotBuilder& fork, uint32_t forkList) const
{
    if (!isEventList(list) || forkList >= fork.m_open.size())
        return false;
    const OpenContainer& items = fork.m_open[forkList];
    const bool eventsOnly = items.kind == Kind::List && items.items.empty() && items.frames.empty()
        && (items.recordKind == Kind::Event || (items.recordKind == Kind::None && fork.m_events.empty()))
        && items.first == 0 && items.count == fork.m_events.size();
    const bool nothingElse = fork.m_nodes.empty() && fork.m_ranges.empty() && fork.m_eventLists.empty()
        && fork.m_blocks.empty() && fork.m_segments.empty() && fork.m_histories.empty() && fork.m_annotations.empty()
        && !fork.m_sawHistory;
    // The list's entries stay contiguous, and every pool keeps an index (entryPoolOf's limit).
    const OpenContainer& mine = m_open[list];
    const bool contiguous = mine.first + mine.count == m_events.size();
    const bool fits = m_events.size() + fork.m_events.size() < std::numeric_limits<uint32_t>::max()
        && m_entryPools.size() + fork.m_entryPools.size() < std::numeric_limits<uint16_t>::max();
    return eventsOnly && nothingElse && contiguous && fits;
}

SnapshotBuilder::ForkIds SnapshotBuilder::adoptItems(uint32_t list, SnapshotBuilder& fork)
{
    ForkIds ids = fork.m_forkedAt;
    const StringTable& strings = *fork.m_strings;
    for (auto id = ids.stringsKnown; id < strings.size(); ++id)
        ids.strings.push_back(m_strings->intern(strings.get(StringId(id))).value);
    const FrameTable& frames = *fork.m_frames;
    for (auto id = ids.framesKnown; id < frames.frameCount(); ++id) {
        Frame frame = frames.frame(FrameId(id));
        frame.filename = StringId(ids.string(frame.filename.value));
        frame.name = StringId(ids.string(frame.name.value));
        ids.frames.push_back(m_frames->intern(frame).value);
    }
    std::vector<FrameId> stack;
    for (auto id = ids.stacksKnown; id < frames.stackCount(); ++id) {
        stack.clear();
        for (const FrameId frame : frames.stack(StackId(id)))
            stack.push_back(FrameId(ids.frame(frame.value)));
        ids.stacks.push_back(m_frames->internStack(stack.data(), stack.size()).value);
    }
    // Entry pools by value: this builder may have met new ones meanwhile too.
    std::vector<uint16_t> pools(fork.m_entryPools.size() + 1, 0);
    for (size_t i = 0; i < fork.m_entryPools.size(); ++i) {
        if (i < fork.m_entryPoolsKnown) {
            pools[i + 1] = static_cast<uint16_t>(i + 1);
            continue;
        }
        const auto it = std::find(m_entryPools.begin(), m_entryPools.end(), fork.m_entryPools[i]);
        if (it == m_entryPools.end())
            m_entryPools.push_back(fork.m_entryPools[i]);
        const auto at = it == m_entryPools.end() ? m_entryPools.size() - 1 : size_t(it - m_entryPools.begin());
        pools[i + 1] = static_cast<uint16_t>(at + 1);
    }

    ids.firstEvent = static_cast<uint32_t>(m_events.size());
    const auto text = [&](StringId id) { return id.isValid() ? StringId(ids.string(id.value)) : id; };
    for (TraceEvent& e : fork.m_events) {
        e.stack = StackId(ids.stack(e.stack.value));
        e.compileContext = text(e.compileContext);
        e.userMetadata = text(e.userMetadata);
        e.pool = pools[e.pool];
    }
    m_open[list].count += static_cast<uint32_t>(fork.m_events.size());
    m_eventsStaged += fork.m_events.size();
    appendMovingPages(m_events, fork.m_events);
    fork.m_events = {};
    if (m_events.size() >= m_eventsAhead.due)
        prefaultEvents();
    for (const std::string& warning : fork.m_warnings)
        warnOnce(warning);
    return ids;
}

} // namespace oomlens::pickle
