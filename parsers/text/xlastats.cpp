#include "parsers/text/xlastats.h"

#include "core/strings.h"
#include "core/utf8prefix.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <string>

namespace oomlens::text {

namespace {

constexpr size_t statsSearchLines = 6; // "BufferAssignment OOM Debugging." sits between
constexpr size_t bfcWindowLines = 20000; // the chunk dump between the two can be long
constexpr size_t peakBufferLines = 40; // "Peak buffers:" lists a few buffers, six lines each

// "             parameter allocation:    1.02GiB" -> 1.02 GiB
std::optional<uint64_t> statSize(std::string_view line, std::string_view label)
{
    const size_t at = line.find(label);
    if (at == std::string_view::npos)
        return std::nullopt;
    const auto size = parseSizeAt(line, at + label.size());
    if (!size || size->garbage)
        return std::nullopt;
    return size->bytes;
}

// "InUse:                   917285632" -> 917285632; zero means "not tracked" (cudaMallocAsync).
std::optional<uint64_t> statInteger(std::string_view line, std::string_view label)
{
    const size_t at = line.find(label);
    if (at == std::string_view::npos)
        return std::nullopt;
    const auto value = parseIntegerAt(line, at + label.size());
    if (!value || *value == 0 || *value >= (uint64_t(1) << 56))
        return std::nullopt;
    return value;
}

struct BfcStats
{
    std::optional<uint64_t> limit;
    std::optional<uint64_t> inUse;
    std::optional<uint64_t> pool;
    std::optional<uint64_t> largestFree;
};

BfcStats readBfcStats(const TextLines& lines, size_t from, size_t to)
{
    BfcStats stats;
    for (size_t i = from; i < to && i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (!contains(line, ":"))
            continue;
        if (auto v = statInteger(line, "Limit:"); v && trimmed(line).starts_with("Limit:"))
            stats.limit = v;
        else if (auto v = statInteger(line, "Stats: Limit:"))
            stats.limit = v;
        if (auto v = statInteger(line, "InUse:"); v && !contains(line, "MaxInUse"))
            stats.inUse = v;
        if (auto v = statInteger(line, "Total bytes in pool:"))
            stats.pool = v;
        else if (auto v = statInteger(line, "total_region_allocated_bytes_:"))
            stats.pool = v;
        if (!stats.limit) {
            if (auto v = statInteger(line, "memory_limit_:"))
                stats.limit = v;
        }
        if (auto v = statInteger(line, "LargestFreeBlock:"))
            stats.largestFree = v;
    }
    return stats;
}

void apply(const BfcStats& stats, OomMessage& message)
{
    if (stats.limit && !message.allowedBytes)
        message.allowedBytes = stats.limit;
    if (stats.inUse && !message.allocatedBytes)
        message.allocatedBytes = stats.inUse;
    if (stats.pool && !message.reservedBytes) {
        message.reservedBytes = stats.pool;
        if (message.allocatedBytes && *stats.pool >= *message.allocatedBytes)
            message.reservedUnallocatedBytes = *stats.pool - *message.allocatedBytes;
    }
    if (stats.limit)
        message.notes.push_back("the BFC allocator's limit (" + std::to_string(*stats.limit)
            + " bytes) is what TF/XLA set aside for this process, not necessarily the whole card");
    if (stats.largestFree)
        message.notes.push_back(
            "the BFC allocator's largest free block was " + std::to_string(*stats.largestFree) + " bytes");
}

} // namespace

size_t readXlaBufferStats(const TextLines& lines, size_t last, OomMessage& message)
{
    size_t header = lines.size();
    for (size_t i = last + 1; i < lines.size() && i <= last + statsSearchLines; ++i) {
        if (contains(lines[i], "BufferAssignment stats:")) {
            header = i;
            break;
        }
    }
    if (header == lines.size())
        return last;
    XlaBufferStats stats;
    size_t end = header;
    for (size_t i = header + 1; i < lines.size() && i <= header + 10; ++i) {
        const std::string_view line = lines[i];
        bool matched = true;
        if (auto v = statSize(line, "parameter allocation:"))
            stats.parameterBytes = v;
        else if (auto v = statSize(line, "constant allocation:"))
            stats.constantBytes = v;
        else if (auto v = statSize(line, "maybe_live_out allocation:"))
            stats.liveOutBytes = v;
        else if (auto v = statSize(line, "preallocated temp allocation:"))
            stats.tempBytes = v;
        else if (auto v = statSize(line, "total allocation:"))
            stats.totalBytes = v;
        else
            matched = contains(line, "fragmentation:");
        if (!matched)
            break;
        end = i;
    }
    if (stats.totalBytes || stats.tempBytes || stats.parameterBytes)
        message.xlaBuffers = stats;
    // The peak buffers name the ops that hold them; JAX's backward pass is "transpose(jvp(...))".
    if (message.phase == Phase::Unknown) {
        for (size_t i = end + 1; i < lines.size() && i <= end + peakBufferLines; ++i) {
            if (contains(lines[i], "transpose(jvp(")) {
                message.phase = Phase::Backward;
                message.notes.push_back("XLA's peak buffers belong to transpose(jvp(...)): the backward pass");
                break;
            }
        }
    }
    return end;
}

void foldBfcLogs(const TextLines& lines, std::vector<FoundOom>& found)
{
    for (size_t k = 0; k < found.size(); ++k) {
        if (found[k].family != OomFamily::Bfc)
            continue;
        const size_t from = found[k].lastLine + 1;
        const bool hasNext = k + 1 < found.size();
        const size_t to = hasNext ? found[k + 1].firstLine : std::min(lines.size(), from + bfcWindowLines);
        const BfcStats stats = readBfcStats(lines, from, to);
        FoundOom* target = &found[k];
        if (hasNext && found[k + 1].firstLine - found[k].lastLine <= bfcWindowLines
            && (found[k + 1].family == OomFamily::Tf || found[k + 1].family == OomFamily::Xla)) {
            target = &found[k + 1];
            OomMessage& message = target->message;
            if (!message.requestedBytes)
                message.requestedBytes = found[k].message.requestedBytes;
            if (!message.device)
                message.device = found[k].message.device;
            message.notes.push_back("the allocator log at line " + std::to_string(found[k].message.sourceLine) + " (\""
                + std::string(utf8Prefix(found[k].core, 80)) + "\") is the same failure; its numbers are used here");
        }
        apply(stats, target->message);
        target->message.truncated = target->message.truncated && !target->message.requestedBytes;
        if (target != &found[k]) {
            found.erase(found.begin() + static_cast<std::ptrdiff_t>(k));
            --k;
        }
    }
}

} // namespace oomlens::text
