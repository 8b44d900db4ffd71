#include "parsers/text/nvidiasmiparser.h"

#include "core/strings.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <QRegularExpression>
#include <QString>

#include <optional>

namespace oomlens::text {

namespace {

constexpr uint64_t mib = uint64_t(1) << 20;

std::string toStd(const QString& text)
{
    return text.toStdString();
}

std::string versionAfter(std::string_view line, std::string_view marker)
{
    const size_t at = line.find(marker);
    if (at == std::string_view::npos)
        return {};
    const std::string_view rest = trimmedLeft(line.substr(at + marker.size()));
    size_t end = 0;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '|')
        ++end;
    return std::string(rest.substr(0, end));
}

std::optional<uint64_t> mibValue(const QString& text)
{
    bool ok = false;
    const qulonglong value = text.toULongLong(&ok);
    if (!ok || value > (uint64_t(1) << 40))
        return std::nullopt;
    return value * mib;
}

std::vector<std::string> splitCsv(std::string_view line)
{
    std::vector<std::string> cells;
    size_t start = 0;
    while (start <= line.size()) {
        const size_t comma = std::min(line.find(',', start), line.size());
        cells.emplace_back(trimmed(line.substr(start, comma - start)));
        start = comma + 1;
    }
    return cells;
}

// One row of `nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv`, in
// whatever column order the header names; memory cells read "1234 MiB".
std::optional<NvidiaSmiGpu> csvGpu(
    const std::vector<std::string>& columns, const std::vector<std::string>& cells, size_t rowsSoFar)
{
    if (columns.empty() || cells.size() != columns.size())
        return std::nullopt;
    NvidiaSmiGpu gpu;
    gpu.index = static_cast<int>(rowsSoFar);
    bool sawMemory = false;
    for (size_t c = 0; c < columns.size(); ++c) {
        const std::string_view column = columns[c];
        const std::string_view cell = cells[c];
        if (column.starts_with("memory.used") || column.starts_with("memory.total")) {
            const auto value = parseIntegerAt(cell, 0);
            if (!value || *value > (uint64_t(1) << 40) || !contains(cell, "MiB"))
                return std::nullopt;
            (column.starts_with("memory.used") ? gpu.usedBytes : gpu.totalBytes) = static_cast<uint64_t>(*value) * mib;
            sawMemory = true;
        } else if (column == "index") {
            const auto index = parseIntegerAt(cell, 0);
            if (!index || *index > 4096)
                return std::nullopt;
            gpu.index = static_cast<int>(*index);
        } else if (column == "name") {
            gpu.name = std::string(cell);
        }
    }
    if (!sawMemory)
        return std::nullopt;
    return gpu;
}

} // namespace

std::vector<NvidiaSmiTable> findNvidiaSmiTables(const TextLines& lines)
{
    // Rows are short (< 120 characters), so these patterns never see long input.
    static const QRegularExpression gpuRow(QStringLiteral("^\\|\\s+(\\d+)\\s+(.+?)\\s+(On|Off)\\s+\\|"));
    static const QRegularExpression memoryRow(QStringLiteral("\\|\\s+(\\d+)MiB\\s*/\\s*(\\d+)MiB\\s+\\|"));
    static const QRegularExpression processRow(
        QStringLiteral("^\\|\\s+(\\d+)\\s+(?:(?:N/A|\\d+)\\s+(?:N/A|\\d+)\\s+)?(\\d+|N/"
                       "A)\\s+(C\\+G|C|G)\\s+(.+?)\\s+(\\d+MiB|N/A)\\s*\\|$"));
    static const QRegularExpression listProcess(
        QStringLiteral("^process\\s+(\\d+)\\s+uses\\s+([0-9.]+)\\s+MB GPU memory"));

    std::vector<NvidiaSmiTable> tables;
    std::optional<NvidiaSmiTable> table;
    std::optional<int> pendingGpu;
    std::vector<std::string> csvColumns; // the header of `nvidia-smi --query-gpu=... --format=csv`
    int listGpu = -1;
    size_t lastUseful = 0;
    auto flush = [&] {
        if (table && (!table->gpus.empty() || !table->processes.empty() || !table->driverVersion.empty()))
            tables.push_back(std::move(*table));
        table.reset();
        pendingGpu.reset();
        csvColumns.clear();
        listGpu = -1;
    };
    auto ensure = [&](size_t i) -> NvidiaSmiTable& {
        if (!table) {
            table = NvidiaSmiTable {};
            table->sourceLine = lines.lineNumber(i);
        }
        lastUseful = i;
        return *table;
    };

    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view raw = lines[i];
        const std::string_view text = trimmed(raw);
        if (table && i > lastUseful + 12)
            flush();
        if (contains(text, "NVIDIA-SMI ") && contains(text, "Driver Version")) {
            flush();
            NvidiaSmiTable& current = ensure(i);
            current.driverVersion = versionAfter(text, "Driver Version:");
            current.cudaVersion = versionAfter(text, "CUDA Version:");
            continue;
        }
        if (text.starts_with("GPU:") && text.size() < 12) {
            if (auto gpu = parseIntegerAt(text, 4); gpu && *gpu < 4096) {
                ensure(i);
                listGpu = static_cast<int>(*gpu);
            }
            continue;
        }
        if ((contains(text, "memory.used [MiB]") || contains(text, "memory.total [MiB]")) && text[0] != '|') {
            flush();
            ensure(i);
            csvColumns = splitCsv(text);
            continue;
        }
        if (text.empty() || text.size() > 200)
            continue;
        const QString row = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
        if (listGpu >= 0 && text.starts_with("process ")) {
            const auto match = listProcess.match(row);
            if (match.hasMatch()) {
                GpuProcess process;
                process.gpu = listGpu;
                process.pid = match.captured(1).toLongLong();
                // list_gpu_processes divides by 1024*1024 and prints three decimals.
                const auto size = parseSizeAt(toStd(match.captured(2) + QStringLiteral(" MiB")), 0);
                if (size)
                    process.bytes = size->bytes;
                ensure(i).processes.push_back(process);
            }
            continue;
        }
        if (table && text[0] != '|') {
            if (auto gpu = csvGpu(csvColumns, splitCsv(text), table->gpus.size())) {
                ensure(i);
                table->gpus.push_back(std::move(*gpu));
            }
            continue;
        }
        if (!table || text[0] != '|')
            continue;
        if (const auto gpu = gpuRow.match(row); gpu.hasMatch() && !contains(text, "MiB")) {
            NvidiaSmiGpu entry;
            entry.index = gpu.captured(1).toInt();
            entry.name = toStd(gpu.captured(2).trimmed());
            ensure(i).gpus.push_back(entry);
            pendingGpu = static_cast<int>(table->gpus.size() - 1);
            continue;
        }
        if (const auto memory = memoryRow.match(row); memory.hasMatch() && pendingGpu) {
            NvidiaSmiGpu& entry = ensure(i).gpus[static_cast<size_t>(*pendingGpu)];
            entry.usedBytes = mibValue(memory.captured(1));
            entry.totalBytes = mibValue(memory.captured(2));
            pendingGpu.reset();
            continue;
        }
        if (const auto process = processRow.match(row); process.hasMatch()) {
            GpuProcess entry;
            entry.gpu = process.captured(1).toInt();
            if (process.captured(2) != QStringLiteral("N/A"))
                entry.pid = process.captured(2).toLongLong();
            entry.type = toStd(process.captured(3));
            entry.name = toStd(process.captured(4).trimmed());
            const QString memory = process.captured(5);
            if (memory.endsWith(QStringLiteral("MiB")))
                entry.bytes = mibValue(memory.chopped(3));
            ensure(i).processes.push_back(entry);
            continue;
        }
        if (contains(text, "Processes:") || contains(text, "No running processes found")
            || contains(text, "Memory-Usage"))
            ensure(i);
    }
    flush();
    return tables;
}

} // namespace oomlens::text
