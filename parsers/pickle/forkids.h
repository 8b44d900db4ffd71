#pragma once

#include "core/snapshot.h"
#include "parsers/pickle/decodedrecords.h"

#include <cstdint>
#include <vector>

namespace oomlens::pickle {

// The ids a fork of SnapshotBuilder assigned (the second decoder of a split trace list,
// nativeunpicklersplit.cpp), in the numbering of the builder it was forked from. The fork starts
// with copies of the builder's tables: what it knew then keeps its id, and what it added is
// interned into the builder's tables in the order the fork met it, so every id is the one a
// single builder would have given.
class ForkIds
{
public:
    // What the fork shares with the builder it is made from.
    static ForkIds at(const DecodedRecords& builder);

    // Interns what `fork` added since it was made into `into` (the builder's records), recording
    // each new id.
    void adopt(const DecodedRecords& fork, DecodedRecords& into);
    // The fork's trace entries in the builder's numbering. Call after adopt().
    void renumber(std::vector<TraceEvent>& events) const;

    uint32_t string(uint32_t id) const { return id >= m_stringsKnown ? m_strings[id - m_stringsKnown] : id; }
    uint32_t frame(uint32_t id) const { return id >= m_framesKnown ? m_frames[id - m_framesKnown] : id; }
    uint32_t stack(uint32_t id) const { return id >= m_stacksKnown ? m_stacks[id - m_stacksKnown] : id; }

    uint32_t firstEvent = 0; // where the fork's event 0 lands in the builder's list

private:
    uint32_t m_stringsKnown = 0, m_framesKnown = 0, m_stacksKnown = 0;
    size_t m_poolsKnown = 0;
    std::vector<uint32_t> m_strings, m_frames, m_stacks;
    std::vector<uint16_t> m_pools; // TraceEvent::pool, fork's -> builder's (0 stays 0)
};

} // namespace oomlens::pickle
