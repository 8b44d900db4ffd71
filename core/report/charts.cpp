#include "core/report/charts.h"

#include "core/presentation/labels.h"
#include "core/report/chartframe.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

namespace oomlens::report {

std::string formatAxisBytes(uint64_t bytes)
{
    if (bytes == 0)
        return "0";
    struct Unit
    {
        uint64_t size;
        const char* name;
    };
    for (const Unit unit :
        { Unit { 1024 * GiB, "TiB" }, Unit { GiB, "GiB" }, Unit { MiB, "MiB" }, Unit { KiB, "KiB" } }) {
        if (bytes >= unit.size) {
            char buffer[32];
            const double value = static_cast<double>(bytes) / static_cast<double>(unit.size);
            if (bytes % unit.size == 0)
                std::snprintf(buffer, sizeof buffer, "%.0f %s", value, unit.name);
            else
                std::snprintf(buffer, sizeof buffer, "%.1f %s", value, unit.name);
            return buffer;
        }
    }
    return std::to_string(bytes) + " B";
}

std::string groupedNumber(int64_t value)
{
    std::string digits = std::to_string(value < 0 ? -value : value);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
        digits.insert(static_cast<size_t>(i), ",");
    return value < 0 ? "-" + digits : digits;
}

std::string categoryClass(Category category)
{
    return "cat-" + std::string(categoryName(category));
}

std::string breakdownSvg(const std::vector<BreakdownRow>& rows)
{
    constexpr BarFrame frame = frames::breakdown;
    const double height = frame.rowHeight * static_cast<double>(rows.size()) + 8;
    SvgWriter svg(frame.width, height, "chart breakdown", "Live memory by category");
    uint64_t widest = 1;
    for (const BreakdownRow& row : rows)
        widest = std::max(widest, std::accumulate(row.bytes.begin(), row.bytes.end(), uint64_t(0)));
    for (size_t r = 0; r < rows.size(); ++r) {
        const BreakdownRow& row = rows[r];
        const double y = 8 + frame.rowHeight * static_cast<double>(r);
        const uint64_t total = std::accumulate(row.bytes.begin(), row.bytes.end(), uint64_t(0));
        svg.text(frame.barLeft - 8, y + 17, row.label, "tick", SvgWriter::Anchor::End);
        double x = frame.barLeft;
        for (int c = 0; c < categoryCount; ++c) {
            const uint64_t bytes = row.bytes[static_cast<size_t>(c)];
            if (bytes == 0)
                continue;
            const double w
                = (frame.barRight - frame.barLeft) * static_cast<double>(bytes) / static_cast<double>(widest);
            const auto category = static_cast<Category>(c);
            char share[16];
            std::snprintf(
                share, sizeof share, "%.1f%%", 100.0 * static_cast<double>(bytes) / static_cast<double>(total));
            svg.rect(x, y, w, frame.rowHeight - 10, "band " + categoryClass(category),
                std::string(categoryLabel(category)) + " " + row.label + ": " + formatBytes(bytes) + " (" + share
                    + ")");
            x += w;
        }
        if (total == 0)
            svg.text(frame.barLeft + 4, y + 17, "nothing live", "tick");
    }
    return svg.finish();
}

namespace {

// The chart's rows: the largest segments first, at most maxSegments of them.
std::vector<const StateSegment*> largestSegments(const AllocatorState& state, size_t maxSegments)
{
    std::vector<const StateSegment*> segments;
    for (const StateSegment& segment : state.segments) {
        if (segment.size > 0)
            segments.push_back(&segment);
    }
    std::stable_sort(segments.begin(), segments.end(),
        [](const StateSegment* a, const StateSegment* b) { return a->size > b->size; });
    if (segments.size() > maxSegments)
        segments.resize(maxSegments);
    return segments;
}

// The block's allocation in the analysis; null where the analysis has none for it.
const Allocation* blockAllocation(const StateBlock& block, const DeviceAnalysis& device)
{
    if (block.allocation >= 0 && static_cast<size_t>(block.allocation) < device.allocations.size())
        return &device.allocations[static_cast<size_t>(block.allocation)];
    return nullptr;
}

std::string blockTooltip(const StateBlock& block, const Allocation* allocation, const DeviceAnalysis& device)
{
    std::string tooltip = formatBytes(block.size);
    if (allocation) {
        tooltip += " " + std::string(categoryLabel(allocation->category));
        if (allocation->reason < device.reasons.size())
            tooltip += " (" + device.reasons[allocation->reason] + ")";
    }
    if (block.pendingFree)
        tooltip += ", freed but still in use by another stream";
    return tooltip;
}

// Blocks are drawn on a half-pixel grid and neighbours of one kind merge into a run, so a
// segment of ten thousand small blocks costs at most a few hundred rectangles.
class BlockRuns
{
public:
    struct Run
    {
        double left = 0;
        double right = 0;
        std::string cssClass;
        std::string tooltip;
        size_t blocks = 0;
        uint64_t bytes = 0;
    };

    BlockRuns(SvgWriter& svg, double y, double height)
        : m_svg(svg)
        , m_y(y)
        , m_height(height)
    { }

    // Whether a block over [left, right) joins the current run, or hides under it at this scale.
    bool absorbs(double left, double right, const std::string& cssClass, uint64_t bytes)
    {
        if (m_run && m_run->cssClass == cssClass && left <= m_run->right + 0.5) {
            m_run->right = std::max(m_run->right, right);
            ++m_run->blocks;
            m_run->bytes += bytes;
            return true;
        }
        return m_run && right <= m_run->right;
    }

    void start(Run run)
    {
        flush();
        m_run = std::move(run);
    }

    void flush()
    {
        if (!m_run)
            return;
        const std::string tooltip = m_run->blocks == 1
            ? m_run->tooltip
            : std::to_string(m_run->blocks) + " blocks, " + formatBytes(m_run->bytes) + " in all";
        m_svg.rect(m_run->left, m_y, std::max(0.5, m_run->right - m_run->left), m_height, m_run->cssClass, tooltip);
        m_run.reset();
    }

private:
    SvgWriter& m_svg;
    double m_y;
    double m_height;
    std::optional<Run> m_run;
};

// One segment's blocks along its bar, `scale` pixels per byte from `barLeft`.
void segmentBlocks(
    const StateSegment& segment, const DeviceAnalysis& device, double barLeft, double scale, BlockRuns& runs)
{
    const auto snap = [](double x) { return std::round(x * 2.0) / 2.0; };
    for (const StateBlock& block : segment.blocks) {
        const uint64_t start = block.address >= segment.address ? block.address - segment.address : 0;
        const uint64_t size = std::min(block.size, segment.size - std::min(segment.size, start));
        const double left = snap(barLeft + static_cast<double>(start) * scale);
        const double right = snap(barLeft + static_cast<double>(start + size) * scale);
        const Allocation* allocation = blockAllocation(block, device);
        std::string cssClass
            = allocation && !block.pendingFree ? "band " + categoryClass(allocation->category) : "block-pending";
        if (runs.absorbs(left, right, cssClass, block.size))
            continue;
        runs.start({ left, right, std::move(cssClass), blockTooltip(block, allocation, device), 1, block.size });
    }
    runs.flush();
}

} // namespace

std::string allocatorMapSvg(const AllocatorState& state, const DeviceAnalysis& device, size_t maxSegments)
{
    const std::vector<const StateSegment*> segments = largestSegments(state, maxSegments);
    constexpr BarFrame frame = frames::allocatorMap;
    const double height = frame.rowHeight * static_cast<double>(segments.size()) + 4;
    SvgWriter svg(frame.width, height, "chart allocator-map", "Segments and blocks of the caching allocator");
    const uint64_t widest = segments.empty() ? 1 : segments.front()->size;
    const double scale = (frame.barRight - frame.barLeft) / static_cast<double>(widest);
    for (size_t r = 0; r < segments.size(); ++r) {
        const StateSegment& segment = *segments[r];
        const double y = 2 + frame.rowHeight * static_cast<double>(r);
        svg.text(frame.barLeft - 6, y + 11, formatBytes(segment.size), "tick small", SvgWriter::Anchor::End);
        svg.rect(frame.barLeft, y, static_cast<double>(segment.size) * scale, frame.rowHeight - 3, "segment",
            std::string(segment.isLargePool ? "large" : "small") + " pool segment of " + formatBytes(segment.size)
                + ", " + formatBytes(segment.freeBytes) + " free, largest free block "
                + formatBytes(segment.largestFree) + (segment.isExpandable ? ", expandable" : ""));
        BlockRuns runs(svg, y, frame.rowHeight - 3);
        segmentBlocks(segment, device, frame.barLeft, scale, runs);
    }
    return svg.finish();
}

} // namespace oomlens::report
