#include "core/analysis/allocationannotations.h"

#include <algorithm>
#include <unordered_map>

namespace oomlens {

namespace {

// The allocation `_annotate_memory` named: PyTorch resolves the pointer with get_allocated_block,
// which finds only a block allocated at that moment, so the one whose lifetime holds the event.
// Addresses are reused, hence the search among every allocation that had this base.
int32_t liveAllocationAt(const DeviceAnalysis& device, const std::vector<int32_t>& candidates, int64_t event)
{
    int32_t pendingFree = -1;
    for (const int32_t index : candidates) {
        const Allocation& allocation = device.allocations[size_t(index)];
        if (allocation.allocEvent >= event || (allocation.freeEvent >= 0 && allocation.freeEvent <= event))
            continue;
        if (allocation.freeRequestedEvent >= 0 && allocation.freeRequestedEvent < event) {
            pendingFree = index; // freed by the caller, still waiting on a stream: a second choice
            continue;
        }
        return index;
    }
    return pendingFree;
}

} // namespace

AllocationAnnotations::AllocationAnnotations(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace)
        return;
    std::unordered_map<uint64_t, std::vector<int32_t>> candidates;
    for (size_t e = 0; e < trace->events.size(); ++e) {
        const TraceEvent& event = trace->events[e];
        if (event.action != TraceAction::Annotate)
            continue;
        AllocationAnnotation annotation;
        annotation.event = static_cast<int64_t>(e);
        annotation.timeUs = event.timeUs;
        annotation.address = event.addr;
        annotation.stack = event.stack;
        if (event.userMetadata.isValid())
            annotation.text = std::string(snapshot.strings->get(event.userMetadata));
        candidates.try_emplace(event.addr);
        m_all.push_back(std::move(annotation));
    }
    if (m_all.empty())
        return;
    // One pass over the allocations, keeping only the addresses some annotation names.
    for (size_t i = 0; i < device.allocations.size(); ++i) {
        auto it = candidates.find(device.allocations[i].address);
        if (it != candidates.end())
            it->second.push_back(static_cast<int32_t>(i));
    }
    for (uint32_t i = 0; i < m_all.size(); ++i) {
        AllocationAnnotation& annotation = m_all[i];
        annotation.allocation = liveAllocationAt(device, candidates[annotation.address], annotation.event);
        if (annotation.allocation >= 0)
            m_byAllocation.emplace_back(annotation.allocation, i);
    }
    std::sort(m_byAllocation.begin(), m_byAllocation.end());
}

std::vector<const AllocationAnnotation*> AllocationAnnotations::of(int32_t allocation) const
{
    std::vector<const AllocationAnnotation*> result;
    auto it = std::lower_bound(m_byAllocation.begin(), m_byAllocation.end(), std::make_pair(allocation, uint32_t(0)));
    for (; it != m_byAllocation.end() && it->first == allocation; ++it)
        result.push_back(&m_all[it->second]);
    return result;
}

const AllocationAnnotation* AllocationAnnotations::atEvent(int64_t event) const
{
    auto it = std::lower_bound(m_all.begin(), m_all.end(), event,
        [](const AllocationAnnotation& annotation, int64_t e) { return annotation.event < e; });
    return it != m_all.end() && it->event == event ? &*it : nullptr;
}

std::string AllocationAnnotations::joinedText(int32_t allocation, std::string_view separator) const
{
    std::string text;
    for (const AllocationAnnotation* annotation : of(allocation)) {
        if (annotation->text.empty())
            continue;
        if (!text.empty())
            text += separator;
        text += annotation->text;
    }
    return text;
}

} // namespace oomlens
