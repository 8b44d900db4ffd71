#pragma once

// Notes attached to an allocation after it was made: `torch.cuda.memory._annotate_tensor(t, "...")`
// (PyTorch 2.14+, `_annotate_memory(data_ptr, ...)` underneath) records an `annotate` trace entry
// whose `addr` is the base of the live allocation's block and whose `user_metadata` holds the text;
// its frames, when recorded, are where the call was made. Each entry is its own timestamped event,
// so several accumulate on one allocation and none replaces the metadata the alloc entry carried.
// Derived once here; the timeline's hover, the live-allocations table and `diagnose --json` read it.

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace oomlens {

struct AllocationAnnotation
{
    int64_t event = -1; // the annotate entry's index in the device trace
    int64_t timeUs = 0;
    uint64_t address = 0;
    // Index into DeviceAnalysis::allocations of the allocation live at `address` at that event;
    // -1 when none is (its alloc fell out of the ring buffer and it was freed before the dump).
    int32_t allocation = -1;
    std::string text;
    StackId stack = FrameTable::emptyStack(); // where the annotation was made, when recorded
};

class AllocationAnnotations
{
public:
    AllocationAnnotations() = default;
    AllocationAnnotations(const Snapshot& snapshot, const DeviceAnalysis& device);

    // In trace order.
    const std::vector<AllocationAnnotation>& all() const { return m_all; }
    bool empty() const { return m_all.empty(); }
    // The annotations of one allocation, in the order they were recorded.
    std::vector<const AllocationAnnotation*> of(int32_t allocation) const;
    // The annotation an `annotate` event recorded; null for any other event.
    const AllocationAnnotation* atEvent(int64_t event) const;
    // "saved for backward; kv cache": the texts of one allocation, joined for a table cell.
    std::string joinedText(int32_t allocation, std::string_view separator = "; ") const;

private:
    std::vector<AllocationAnnotation> m_all;
    std::vector<std::pair<int32_t, uint32_t>> m_byAllocation; // (allocation, index in m_all), sorted
};

} // namespace oomlens
