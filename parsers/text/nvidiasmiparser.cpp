#include "parsers/text/nvidiasmiparser.h"

#include "core/strings.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <limits>
#include <optional>
#include <regex>

namespace oomlens::text {

namespace {

constexpr uint64_t mib = uint64_t(1) << 20;

// A run of ASCII digits as a number; 0 when it does not fit, as the table's other readers take it.
template <typename Number> Number digitsValue(std::string_view digits)
{
    uint64_t value = 0;
    for (const char c : digits) {
        const auto d = uint64_t(c - '0');
        if (value > (uint64_t(std::numeric_limits<Number>::max()) - d) / 10)
            return 0;
        value = value * 10 + d;
    }
    return Number(value);
}

std::string_view captured(const std::cmatch& match, size_t group)
{
    return std::string_view(match[group].first, size_t(match[group].length()));
}

bool search(std::string_view row, std::cmatch& match, const std::regex& pattern)
{
    return std::regex_search(row.data(), row.data() + row.size(), match, pattern);
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

std::optional<uint64_t> mibValue(std::string_view digits)
{
    const auto value = digitsValue<uint64_t>(digits);
    if (value > (uint64_t(1) << 40) || (value == 0 && digits.find_first_not_of('0') != std::string_view::npos))
        return std::nullopt; // beyond any GPU, or beyond 64 bits
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

// The lines of one input, read for nvidia-smi output: the box-drawn table nvidia-smi prints, the
// CSV of `--query-gpu`, and torch.cuda.list_gpu_processes(); each row joins the table being read.
class TableReader
{
public:
    explicit TableReader(const TextLines& lines)
        : m_lines(lines)
    { }

    std::vector<NvidiaSmiTable> read()
    {
        for (size_t i = 0; i < m_lines.size(); ++i) {
            if (m_table && i > m_lastUseful + 12)
                flush();
            readLine(i, trimmed(m_lines[i]));
        }
        flush();
        return std::move(m_tables);
    }

private:
    // The header lines start a table (or name the GPU of the list that follows); other lines
    // count only while a table is being read.
    void readLine(size_t i, std::string_view text)
    {
        if (contains(text, "NVIDIA-SMI ") && contains(text, "Driver Version")) {
            flush();
            NvidiaSmiTable& current = ensure(i);
            current.driverVersion = versionAfter(text, "Driver Version:");
            current.cudaVersion = versionAfter(text, "CUDA Version:");
            return;
        }
        if (text.starts_with("GPU:") && text.size() < 12) {
            if (auto gpu = parseIntegerAt(text, 4); gpu && *gpu < 4096) {
                ensure(i);
                m_listGpu = static_cast<int>(*gpu);
            }
            return;
        }
        if ((contains(text, "memory.used [MiB]") || contains(text, "memory.total [MiB]")) && text[0] != '|') {
            flush();
            ensure(i);
            m_csvColumns = splitCsv(text);
            return;
        }
        if (text.empty() || text.size() > 200)
            return;
        if (m_listGpu >= 0 && text.starts_with("process ")) {
            readListedProcess(i, text);
            return;
        }
        if (m_table && text[0] != '|') {
            if (auto gpu = csvGpu(m_csvColumns, splitCsv(text), m_table->gpus.size())) {
                ensure(i);
                m_table->gpus.push_back(std::move(*gpu));
            }
            return;
        }
        if (m_table && text[0] == '|')
            readBoxRow(i, text);
    }

    // "process 1234 uses 512.000 MB GPU memory" under "GPU:0".
    void readListedProcess(size_t i, std::string_view text)
    {
        static const std::regex listProcess(R"(^process\s+(\d+)\s+uses\s+([0-9.]+)\s+MB GPU memory)");
        std::cmatch match;
        if (!search(text, match, listProcess))
            return;
        GpuProcess process;
        process.gpu = m_listGpu;
        process.pid = digitsValue<int64_t>(captured(match, 1));
        // list_gpu_processes divides by 1024*1024 and prints three decimals.
        const auto size = parseSizeAt(std::string(captured(match, 2)) + " MiB", 0);
        if (size)
            process.bytes = size->bytes;
        ensure(i).processes.push_back(process);
    }

    // A row of the box-drawn table: a GPU's name, its memory on the row below, or a process.
    void readBoxRow(size_t i, std::string_view text)
    {
        // Rows are short (at most 200 bytes, checked above), so these patterns never see long input,
        // and only rows of a table already found reach them.
        static const std::regex gpuRow(R"(^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|)");
        static const std::regex memoryRow(R"(\|\s+(\d+)MiB\s*/\s*(\d+)MiB\s+\|)");
        static const std::regex processRow(R"(^\|\s+(\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(\d+|N/)"
                                           R"(A)\s+(C\+G|C|G)\s+(.+?)\s+(\d+MiB|N/A)\s*\|$)");
        std::cmatch match;
        if (!contains(text, "MiB") && search(text, match, gpuRow)) {
            NvidiaSmiGpu entry;
            entry.index = digitsValue<int>(captured(match, 1));
            entry.name = std::string(trimmed(captured(match, 2)));
            ensure(i).gpus.push_back(entry);
            m_pendingGpu = static_cast<int>(m_table->gpus.size() - 1);
        } else if (m_pendingGpu && search(text, match, memoryRow)) {
            NvidiaSmiGpu& entry = ensure(i).gpus[static_cast<size_t>(*m_pendingGpu)];
            entry.usedBytes = mibValue(captured(match, 1));
            entry.totalBytes = mibValue(captured(match, 2));
            m_pendingGpu.reset();
        } else if (search(text, match, processRow)) {
            ensure(i).processes.push_back(boxProcess(match));
        } else if (contains(text, "Processes:") || contains(text, "No running processes found")
            || contains(text, "Memory-Usage")) {
            ensure(i);
        }
    }

    static GpuProcess boxProcess(const std::cmatch& match)
    {
        GpuProcess entry;
        entry.gpu = digitsValue<int>(captured(match, 1));
        if (captured(match, 2) != "N/A")
            entry.pid = digitsValue<int64_t>(captured(match, 2));
        entry.type = std::string(captured(match, 3));
        entry.name = std::string(trimmed(captured(match, 4)));
        const std::string_view memory = captured(match, 5);
        if (memory.ends_with("MiB"))
            entry.bytes = mibValue(memory.substr(0, memory.size() - 3));
        return entry;
    }

    // Ends the table being read; kept only when it holds something.
    void flush()
    {
        if (m_table && (!m_table->gpus.empty() || !m_table->processes.empty() || !m_table->driverVersion.empty()))
            m_tables.push_back(std::move(*m_table));
        m_table.reset();
        m_pendingGpu.reset();
        m_csvColumns.clear();
        m_listGpu = -1;
    }

    // The table being read, begun at line i when none is; line i was of use to it.
    NvidiaSmiTable& ensure(size_t i)
    {
        if (!m_table) {
            m_table = NvidiaSmiTable {};
            m_table->sourceLine = m_lines.lineNumber(i);
        }
        m_lastUseful = i;
        return *m_table;
    }

    const TextLines& m_lines;
    std::vector<NvidiaSmiTable> m_tables;
    std::optional<NvidiaSmiTable> m_table;
    std::optional<int> m_pendingGpu; // the GPU row whose memory row comes next
    std::vector<std::string> m_csvColumns; // the header of `nvidia-smi --query-gpu=... --format=csv`
    int m_listGpu = -1; // the GPU that list_gpu_processes() named last
    size_t m_lastUseful = 0;
};

} // namespace

std::vector<NvidiaSmiTable> findNvidiaSmiTables(const TextLines& lines)
{
    return TableReader(lines).read();
}

} // namespace oomlens::text
