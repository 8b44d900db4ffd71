#include "core/analysis/userframe.h"
#include "core/report/reportsections.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::report::sections {

namespace {

// "live at the peak and the OOM", "freed before the peak": where the annotated memory stood at
// the two moments a reader of the report looks at.
std::string standing(const DeviceAnalysis& device, const Allocation& allocation)
{
    std::string at;
    const auto add = [&](bool live, std::string_view moment) {
        if (live)
            at += std::string(at.empty() ? "live at " : " and ") + std::string(moment);
    };
    add(allocation.liveAfter(device.peakEvent), "the peak");
    if (!device.ooms.empty())
        add(allocation.liveAfter(device.ooms.front().eventIndex), "the OOM");
    if (!at.empty())
        return at;
    return allocation.freeEvent < 0 ? "live at the dump" : "freed before the peak";
}

} // namespace

// The notes the program attached to its allocations (torch.cuda.memory._annotate_tensor), in the
// order it made them, each with the allocation it names: its size, band and where it stood at the
// peak and the OOM. Written only when the snapshot holds any.
void annotations(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown)
{
    const DeviceAnalysis& device = *shown.device;
    const Snapshot& snapshot = *shown.analysis->snapshot;
    const AllocationAnnotations& notes = shown.annotations;
    if (notes.empty())
        return;
    html.raw("<h3>Annotations</h3>\n");
    html.element("p",
        "Notes the program attached to its allocations with torch.cuda.memory._annotate_tensor, in the order it "
        "made them.");
    html.raw("\n<table class=\"pools\">\n<tr><th>Note</th><th>Made at</th><th>Allocation</th><th>Band</th>"
             "<th>At the peak and the OOM</th></tr>\n");
    const size_t shownRows = std::min(notes.all().size(), context.options.topAllocations * 4);
    for (size_t i = 0; i < shownRows; ++i) {
        const AllocationAnnotation& note = notes.all()[i];
        html.raw("<tr><td>");
        html.text(note.text);
        html.raw("</td><td>");
        const std::string site = userFrameLabel(snapshot, note.stack);
        html.text(site.empty() ? parts::eventLabel(note.event) : site);
        if (note.allocation < 0) {
            html.raw("</td><td colspan=\"3\">");
            html.text("not in the trace (allocated before it began and freed before the dump)");
            html.raw("</td></tr>\n");
            continue;
        }
        const Allocation& allocation = device.allocations[static_cast<size_t>(note.allocation)];
        html.raw("</td><td>");
        html.text(formatBytes(allocation.requestedSize));
        html.raw("</td>");
        parts::categoryCell(html, allocation.category);
        html.raw("<td>");
        html.text(standing(device, allocation));
        html.raw("</td></tr>\n");
    }
    html.raw("</table>\n");
    if (shownRows < notes.all().size())
        html.element("p",
            std::to_string(notes.all().size() - shownRows)
                + " more notes are in diagnose --json's allocation_annotations.",
            "note");
    html.raw("\n");
}

} // namespace oomlens::report::sections
