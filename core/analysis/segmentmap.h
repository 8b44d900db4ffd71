#pragma once

#include "core/analysis/allocatorstate.h"

#include <cstdint>
#include <map>

namespace oomlens {

// The device's segments by start address, as allocatorStateAt and poolSeries rebuild them from
// the dump-time segments and the trace's segment events.
using SegmentMap = std::map<uint64_t, StateSegment>;

// The segments right after `event` (-1: before the first event), without blocks: the dump-time
// segments with the later segment events undone, as memory_viz's Allocator State History does.
SegmentMap segmentsAfter(const Snapshot& snapshot, int32_t device, int64_t event);

// Applies one segment event forwards (segment_alloc/map add a range, segment_free/unmap remove
// one) or backwards (undo). Other actions are ignored.
void applySegmentEvent(SegmentMap& map, const TraceEvent& event, bool undo);

// The segment holding `address`, or map.end().
SegmentMap::iterator segmentAt(SegmentMap& map, uint64_t address);

} // namespace oomlens
