#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// What is live at one moment (right after `event`; -1 = before the first event), for the
// live table, the top-N list and the call tree of the GUI and the report.
std::vector<uint32_t> liveAllocations(const DeviceAnalysis& device, int64_t event);
CategoryBytes liveByCategory(const DeviceAnalysis& device, int64_t event);
// liveByCategory at each of `events` (ascending), in one pass over the allocations: the
// categories at every oom event of a trace without building its whole series.
std::vector<CategoryBytes> liveByCategoryAt(const DeviceAnalysis& device, const std::vector<int64_t>& events);

struct StackBytes
{
    StackId stack;
    uint64_t bytes = 0; // requested
    uint32_t count = 0;
    CategoryBytes byCategory {};
};
// Live bytes grouped by allocating stack, largest first, at most `limit` entries.
std::vector<StackBytes> topStacks(const DeviceAnalysis& device, int64_t event, size_t limit);

// Live bytes as a tree of frames, outermost caller at the root's children; noise frames of the
// interpreter and the unwinder (the ones memory_viz hides) are skipped.
struct CallTreeNode
{
    FrameId frame; // invalid for the root
    uint64_t bytes = 0;
    uint32_t count = 0;
    std::vector<CallTreeNode> children; // largest first
};
CallTreeNode callTree(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event);

// Fixed state (parameters, gradients, optimizer state) vs. what scales with the batch.
uint64_t staticBytes(const CategoryBytes& bytes);
uint64_t dynamicBytes(const CategoryBytes& bytes);

} // namespace oomlens
