#include "core/presentation/labels.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace oomlens::report::parts {

void stack(HtmlWriter& html, const Snapshot& snapshot, StackId id, std::string_view summary, size_t maxFrames)
{
    html.raw("<details><summary>");
    html.text(summary);
    html.raw("</summary>");
    if (!snapshot.frames || !snapshot.strings) {
        html.raw("</details>\n");
        return;
    }
    const FrameTable::StackView frames = snapshot.frames->stack(id);
    if (frames.empty()) {
        html.element("p", "No stack recorded for this allocation.", "note");
        html.raw("</details>\n");
        return;
    }
    html.raw("<pre><code>");
    const size_t shown = std::min(frames.size(), maxFrames);
    for (size_t i = 0; i < shown; ++i) {
        const Frame& frame = snapshot.frames->frame(frames[i]);
        html.text(std::string(snapshot.strings->get(frame.name)) + "  "
            + std::string(snapshot.strings->get(frame.filename)) + ":" + std::to_string(frame.line) + "\n");
    }
    if (shown < frames.size())
        html.text("… " + std::to_string(frames.size() - shown) + " more frames\n");
    html.raw("</code></pre></details>\n");
}

void categoryLegend(HtmlWriter& html, const std::function<bool(Category)>& held)
{
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        if (!listedWhenEmpty(category) && !held(category))
            continue;
        html.legendEntry(categoryClass(category), categoryLabel(category));
        html.raw(" ");
    }
}

void categoryCell(HtmlWriter& html, Category category)
{
    html.raw("<td>");
    html.swatch(categoryClass(category));
    html.text(categoryLabel(category));
    html.raw("</td>");
}

std::string eventLabel(int64_t event)
{
    return event < 0 ? std::string("before the trace began") : "event " + groupedNumber(event);
}

bool dumpStateOnly(const DeviceAnalysis& device)
{
    return std::all_of(device.allocations.begin(), device.allocations.end(),
        [](const Allocation& allocation) { return allocation.olderThanTrace(); });
}

void diagnosisHeading(HtmlWriter& html, const Diagnosis& diagnosis)
{
    html.raw("<h3>");
    html.text(diagnosis.title);
    char confidence[48];
    std::snprintf(confidence, sizeof confidence, "confidence %d%%",
        static_cast<int>(std::lround(std::clamp(diagnosis.confidence, 0.0, 1.0) * 100)));
    html.raw(" ");
    html.element("span", confidence, "confidence");
    html.raw("</h3>\n");
    if (!diagnosis.summary.empty())
        html.element("p", diagnosis.summary);
}

} // namespace oomlens::report::parts
