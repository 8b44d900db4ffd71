#include "parsers/text/summaryparser.h"

#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <array>
#include <optional>
#include <string>

namespace oomlens::text {

namespace {

struct Metric
{
    std::string_view label;
    std::string_view key;
    bool bytes;
    bool pooled;
};

// formats.md §3.1, in print order; keys are the JSON contract's snake_case names.
constexpr std::array<Metric, 11> metrics { {
    { "Allocated memory", "allocated_memory", true, true },
    { "Active memory", "active_memory", true, true },
    { "Requested memory", "requested_memory", true, true },
    { "GPU reserved memory", "gpu_reserved_memory", true, true },
    { "Non-releasable memory", "non_releasable_memory", true, true },
    { "Allocations", "allocations", false, true },
    { "Active allocs", "active_allocs", false, true },
    { "GPU reserved segments", "gpu_reserved_segments", false, true },
    { "Non-releasable allocs", "non_releasable_allocs", false, true },
    { "Oversize allocations", "oversize_allocations", false, false },
    { "Oversize GPU segments", "oversize_gpu_segments", false, false },
} };

enum class LineKind : uint8_t { None, Border, Title, Counters, ColumnHeader, MetricRow, PoolRow };

struct Classified
{
    LineKind kind = LineKind::None;
    const Metric* metric = nullptr;
    bool largePool = false;
    std::vector<std::string_view> cells;
};

std::vector<std::string_view> splitCells(std::string_view text)
{
    std::vector<std::string_view> cells;
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t end = text.find('|', begin);
        if (end == std::string_view::npos)
            end = text.size();
        cells.push_back(trimmed(text.substr(begin, end - begin)));
        begin = end + 1;
    }
    return cells;
}

bool isBorder(std::string_view text)
{
    // "|=====|", "|-----|", and the glued "|====||  PyTorch CUDA memory summary ..." of some pastes.
    if (text.size() < 12 || text[0] != '|')
        return false;
    const char fill = text[1];
    if (fill != '=' && fill != '-')
        return false;
    size_t i = 1;
    while (i < text.size() && text[i] == fill)
        ++i;
    return i > 10;
}

Classified classify(std::string_view line)
{
    Classified result;
    const size_t bar = line.find('|');
    if (bar == std::string_view::npos)
        return result;
    const std::string_view text = trimmed(line.substr(bar));
    if (contains(text, "memory summary, device ID")) {
        result.kind = LineKind::Title;
        return result;
    }
    if (contains(text, "OOMs:") && contains(text, "retries:")) {
        result.kind = LineKind::Counters;
        return result;
    }
    if (contains(text, "Metric") && contains(text, "Cur Usage")) {
        result.kind = LineKind::ColumnHeader;
        return result;
    }
    if (isBorder(text)) {
        result.kind = LineKind::Border;
        return result;
    }
    // Most lines with a bar are log lines ("INFO | step 10 | loss ..."): check the label before splitting.
    const size_t labelEnd = text.find('|', 1);
    const std::string_view firstCell
        = trimmed(text.substr(1, labelEnd == std::string_view::npos ? std::string_view::npos : labelEnd - 1));
    bool known = firstCell == "from large pool" || firstCell == "from small pool";
    for (const Metric& metric : metrics)
        known = known || metric.label == firstCell;
    if (!known)
        return result;
    std::vector<std::string_view> cells = splitCells(text.substr(1));
    // A row without its closing bar was cut: its last cell may be a cut number ("20" of "20596 MB").
    if (text.back() != '|' && !cells.empty())
        cells.pop_back();
    else if (!cells.empty())
        cells.pop_back(); // the empty piece after the closing bar
    if (cells.size() < 2)
        return result;
    const std::string_view label = cells[0];
    if (label == "from large pool" || label == "from small pool") {
        result.kind = LineKind::PoolRow;
        result.largePool = label == "from large pool";
    } else {
        for (const Metric& metric : metrics) {
            if (metric.label == label) {
                result.kind = LineKind::MetricRow;
                result.metric = &metric;
            }
        }
        if (result.kind == LineKind::None)
            return result;
    }
    cells.erase(cells.begin());
    result.cells = std::move(cells);
    return result;
}

// "12166 MB", "0 B", "512000 KiB": a floored integer in the given unit.
std::optional<uint64_t> parseByteCell(std::string_view cell, std::string& era)
{
    size_t end = 0;
    const auto number = parseIntegerAt(cell, 0, &end);
    if (!number)
        return std::nullopt;
    const std::string_view unit = trimmed(cell.substr(end));
    const uint64_t factor = unitMultiplier(unit);
    if (factor == 0)
        return std::nullopt;
    if (unit.size() == 3 && unit[1] == 'i')
        era = "KiB/MiB";
    else if (unit.size() == 2 && unit[1] == 'B' && era.empty())
        era = "KB/MB";
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(*number, factor, &bytes))
        return std::nullopt;
    return bytes;
}

// "812", "2345 K", "3 M": counts scaled down by 1000 while large.
std::optional<uint64_t> parseCountCell(std::string_view cell)
{
    size_t end = 0;
    const auto number = parseIntegerAt(cell, 0, &end);
    if (!number)
        return std::nullopt;
    const std::string_view suffix = trimmed(cell.substr(end));
    uint64_t factor = 1;
    if (suffix == "K")
        factor = 1000;
    else if (suffix == "M")
        factor = 1000000;
    else if (!suffix.empty())
        return std::nullopt;
    return *number * factor;
}

SummaryRow parseRow(const Classified& row, bool bytes, std::string& era, bool& incomplete)
{
    SummaryRow result;
    std::array<std::optional<uint64_t>*, 4> columns { &result.current, &result.peak, &result.allocated, &result.freed };
    size_t parsed = 0;
    for (size_t i = 0; i < columns.size() && i < row.cells.size(); ++i) {
        *columns[i] = bytes ? parseByteCell(row.cells[i], era) : parseCountCell(row.cells[i]);
        if (*columns[i])
            ++parsed;
    }
    if (parsed < columns.size())
        incomplete = true;
    return result;
}

std::optional<int64_t> counterAfter(std::string_view line, std::string_view marker)
{
    const size_t at = line.find(marker);
    if (at == std::string_view::npos)
        return std::nullopt;
    const auto value = parseIntegerAt(line, at + marker.size());
    if (!value || *value > uint64_t(INT64_MAX))
        return std::nullopt;
    return static_cast<int64_t>(*value);
}

struct Builder
{
    MemorySummary summary;
    bool hasTitle = false;
    bool hasRows = false;
    bool endedWithBorder = false;
    bool incomplete = false;
    bool sawRequested = false;
    const Metric* current = nullptr;
    size_t poolRows = 0;
    size_t pooledMetrics = 0;
    size_t lastLine = 0;
};

void finish(Builder& builder, std::vector<MemorySummary>& out)
{
    if (!builder.hasTitle && !builder.hasRows)
        return;
    MemorySummary& summary = builder.summary;
    if (summary.unitEra.empty() && builder.sawRequested)
        summary.unitEra = "KiB/MiB";
    summary.abbreviated = builder.pooledMetrics >= 2 && builder.poolRows == 0;
    const bool lastRowSeen = summary.rows.count("oversize_gpu_segments") != 0;
    summary.truncated = builder.incomplete || !builder.hasTitle || !lastRowSeen || !builder.endedWithBorder;
    // cudaMallocAsync keeps only current/peak: every cumulative column reads zero.
    bool anyMemoryRow = false;
    bool cumulativeZero = true;
    for (const Metric& metric : metrics) {
        const auto it = summary.rows.find(std::string(metric.key));
        if (it == summary.rows.end() || !metric.bytes)
            continue;
        anyMemoryRow = true;
        cumulativeZero = cumulativeZero && it->second.allocated.value_or(0) == 0 && it->second.freed.value_or(0) == 0;
    }
    bool anyCurrent = false;
    for (const auto& [key, row] : summary.rows)
        anyCurrent = anyCurrent || row.current.value_or(0) != 0 || row.peak.value_or(0) != 0;
    summary.allZero = anyMemoryRow && cumulativeZero && anyCurrent;
    out.push_back(std::move(summary));
}

} // namespace

std::vector<MemorySummary> findMemorySummaries(const TextLines& lines)
{
    std::vector<MemorySummary> out;
    std::optional<Builder> builder;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (line.find('|') == std::string_view::npos) {
            if (builder && i > builder->lastLine + 1) {
                finish(*builder, out);
                builder.reset();
            }
            continue;
        }
        const Classified row = classify(line);
        if (row.kind == LineKind::None) {
            if (builder) {
                finish(*builder, out);
                builder.reset();
            }
            continue;
        }
        // A second title starts the next device's table.
        if (row.kind == LineKind::Title && builder && (builder->hasTitle || builder->hasRows)) {
            finish(*builder, out);
            builder.reset();
        }
        if (!builder) {
            builder = Builder {};
            builder->summary.sourceLine = lines.lineNumber(i);
        }
        builder->lastLine = i;
        builder->endedWithBorder = false;
        switch (row.kind) {
        case LineKind::Title:
            builder->hasTitle = true;
            if (auto device = counterAfter(line, "device ID "))
                builder->summary.device = static_cast<int>(std::min<int64_t>(*device, 1 << 20));
            break;
        case LineKind::Counters:
            builder->summary.ooms = counterAfter(line, "OOMs:");
            builder->summary.allocRetries = counterAfter(line, "retries:");
            break;
        case LineKind::Border:
            builder->endedWithBorder = contains(line, "====");
            break;
        case LineKind::MetricRow: {
            builder->hasRows = true;
            builder->current = row.metric;
            if (row.metric->key == "requested_memory")
                builder->sawRequested = true;
            if (row.metric->pooled)
                ++builder->pooledMetrics;
            builder->summary.rows[std::string(row.metric->key)]
                = parseRow(row, row.metric->bytes, builder->summary.unitEra, builder->incomplete);
            break;
        }
        case LineKind::PoolRow: {
            builder->hasRows = true;
            ++builder->poolRows;
            if (!builder->current) {
                // The paste starts inside a metric's block: we cannot tell which metric it is.
                builder->incomplete = true;
                break;
            }
            auto& pool = row.largePool ? builder->summary.largePool : builder->summary.smallPool;
            pool[std::string(builder->current->key)]
                = parseRow(row, builder->current->bytes, builder->summary.unitEra, builder->incomplete);
            break;
        }
        default:
            break;
        }
    }
    if (builder) {
        // A table that reaches the end of the input mid-row was cut there.
        finish(*builder, out);
    }
    return out;
}

} // namespace oomlens::text
