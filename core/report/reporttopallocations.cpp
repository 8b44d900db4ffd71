#include "core/analysis/userframe.h"
#include "core/presentation/labels.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::report::sections {

namespace {

std::string whenLabel(Phase phase, int32_t step)
{
    std::string when;
    if (phase != Phase::Unknown)
        when = phaseInSentence(phase);
    if (step >= 0)
        when += (when.empty() ? "step " : " of step ") + std::to_string(step);
    return when;
}

// The allocations live right after `event`, largest first, at most `limit`.
std::vector<const Allocation*> largestLiveAt(const DeviceAnalysis& device, int64_t event, size_t limit)
{
    std::vector<const Allocation*> live;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.liveAfter(event))
            live.push_back(&allocation);
    }
    const auto larger = [](const Allocation* a, const Allocation* b) {
        if (a->requestedSize != b->requestedSize)
            return a->requestedSize > b->requestedSize;
        return a->allocEvent < b->allocEvent;
    };
    const size_t keep = std::min(limit, live.size());
    std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), larger);
    live.resize(keep);
    return live;
}

} // namespace

// The largest allocations live at the peak (or the dump), each with its stack.
void topAllocations(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const DeviceAnalysis& device = *shown.device;
    const Snapshot& snapshot = *shown.analysis->snapshot;
    const std::vector<const Allocation*> top = largestLiveAt(device, device.peakEvent, context.options.topAllocations);
    html.element("h3",
        parts::dumpStateOnly(device) ? "Largest allocations live at the dump" : "Largest allocations live at the peak");
    html.raw("\n");
    if (top.empty()) {
        html.element("p", "Nothing was live at the peak.", "note");
        return;
    }
    const AllocationAnnotations& notes = shown.annotations;
    for (size_t i = 0; i < top.size(); ++i) {
        const Allocation& allocation = *top[i];
        std::string summary = std::to_string(i + 1) + ". " + formatBytes(allocation.requestedSize) + " · "
            + std::string(categoryLabel(allocation.category));
        const std::string when = whenLabel(allocation.phase, allocation.step);
        summary += " · allocated " + (when.empty() ? parts::eventLabel(allocation.allocEvent) : "in " + when);
        // "forward (model.py:42)": the frame a reader recognises (analysis/userframe.h).
        if (const std::string frame = userFrameLabel(snapshot, allocation.stack); !frame.empty())
            summary += " · " + frame;
        if (allocation.reason < device.reasons.size())
            summary += " — " + device.reasons[allocation.reason];
        if (!notes.empty()) {
            const int32_t index = static_cast<int32_t>(&allocation - device.allocations.data());
            if (const std::string text = notes.joinedText(index); !text.empty())
                summary += " · note: " + text;
        }
        parts::stack(html, snapshot, allocation.stack, summary, context.options.maxStackFrames);
    }
}

} // namespace oomlens::report::sections
