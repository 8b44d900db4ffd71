#include "core/report/charts.h"

#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace oomlens::report {

std::string formatAxisBytes(uint64_t bytes)
{
    if (bytes == 0)
        return "0";
    struct Unit {
        uint64_t size;
        const char* name;
    };
    for (const Unit unit : {Unit{1024 * GiB, "TiB"}, Unit{GiB, "GiB"}, Unit{MiB, "MiB"}, Unit{KiB, "KiB"}}) {
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

std::string categoryClass(Category category)
{
    return "cat-" + std::string(categoryName(category));
}

std::string breakdownSvg(const std::vector<BreakdownRow>& rows)
{
    constexpr double width = 960;
    constexpr double rowHeight = 34;
    constexpr double barLeft = 120;
    constexpr double barRight = 944;
    const double height = rowHeight * static_cast<double>(rows.size()) + 8;
    SvgWriter svg(width, height, "chart breakdown", "Live memory by category");
    uint64_t widest = 1;
    for (const BreakdownRow& row : rows)
        widest = std::max(widest, std::accumulate(row.bytes.begin(), row.bytes.end(), uint64_t(0)));
    for (size_t r = 0; r < rows.size(); ++r) {
        const BreakdownRow& row = rows[r];
        const double y = 8 + rowHeight * static_cast<double>(r);
        const uint64_t total = std::accumulate(row.bytes.begin(), row.bytes.end(), uint64_t(0));
        svg.text(barLeft - 8, y + 17, row.label, "tick", SvgWriter::Anchor::End);
        double x = barLeft;
        for (int c = 0; c < categoryCount; ++c) {
            const uint64_t bytes = row.bytes[static_cast<size_t>(c)];
            if (bytes == 0)
                continue;
            const double w = (barRight - barLeft) * static_cast<double>(bytes) / static_cast<double>(widest);
            const auto category = static_cast<Category>(c);
            char share[16];
            std::snprintf(share, sizeof share, "%.1f%%", 100.0 * static_cast<double>(bytes) / static_cast<double>(total));
            svg.rect(x, y, w, rowHeight - 10, "band " + categoryClass(category),
                     std::string(categoryName(category)) + " " + row.label + ": " + formatBytes(bytes) + " (" + share + ")");
            x += w;
        }
        if (total == 0)
            svg.text(barLeft + 4, y + 17, "nothing live", "tick");
    }
    return svg.finish();
}

namespace {

const char* blockClass(BlockState state)
{
    switch (state) {
    case BlockState::ActiveAllocated:
        return "block-allocated";
    case BlockState::ActivePendingFree:
        return "block-pending";
    case BlockState::Inactive:
        return "block-free";
    case BlockState::Unknown:
        break;
    }
    return "block-unknown";
}

const char* blockStateName(BlockState state)
{
    switch (state) {
    case BlockState::ActiveAllocated:
        return "allocated";
    case BlockState::ActivePendingFree:
        return "freed, waiting for its stream";
    case BlockState::Inactive:
        return "free";
    case BlockState::Unknown:
        break;
    }
    return "unknown";
}

} // namespace

std::string allocatorMapSvg(const Snapshot& snapshot, int32_t device, size_t maxSegments)
{
    std::vector<const Segment*> segments;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device == device && segment.totalSize > 0)
            segments.push_back(&segment);
    }
    std::stable_sort(segments.begin(), segments.end(),
                     [](const Segment* a, const Segment* b) { return a->totalSize > b->totalSize; });
    if (segments.size() > maxSegments)
        segments.resize(maxSegments);

    constexpr double width = 960;
    constexpr double rowHeight = 16;
    constexpr double barLeft = 130;
    constexpr double barRight = 944;
    const double height = rowHeight * static_cast<double>(segments.size()) + 4;
    SvgWriter svg(width, height, "chart allocator-map", "Segments and blocks of the caching allocator");
    const uint64_t widest = segments.empty() ? 1 : segments.front()->totalSize;
    for (size_t r = 0; r < segments.size(); ++r) {
        const Segment& segment = *segments[r];
        const double y = 2 + rowHeight * static_cast<double>(r);
        const double scale = (barRight - barLeft) / static_cast<double>(widest);
        svg.text(barLeft - 6, y + 11, formatBytes(segment.totalSize), "tick small", SvgWriter::Anchor::End);
        svg.rect(barLeft, y, static_cast<double>(segment.totalSize) * scale, rowHeight - 3, "segment",
                 std::string(segment.isLargePool ? "large" : "small") + " pool segment of "
                     + formatBytes(segment.totalSize) + ", " + formatBytes(segment.allocatedSize) + " allocated"
                     + (segment.isExpandable ? ", expandable" : ""));
        const size_t end = std::min<size_t>(snapshot.blocks.size(), size_t(segment.firstBlock) + segment.blockCount);
        uint64_t offset = 0;
        for (size_t b = segment.firstBlock; b < end; ++b) {
            const Block& block = snapshot.blocks[b];
            const uint64_t start = block.address >= segment.address ? block.address - segment.address : offset;
            offset = start + block.size;
            if (block.state == BlockState::Inactive)
                continue; // the segment's background already reads as free space
            svg.rect(barLeft + static_cast<double>(start) * scale, y,
                     std::max(0.5, static_cast<double>(block.size) * scale), rowHeight - 3, blockClass(block.state),
                     std::string(blockStateName(block.state)) + " block of " + formatBytes(block.size));
        }
    }
    return svg.finish();
}

} // namespace oomlens::report
