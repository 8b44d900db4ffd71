#include "parsers/text/memorylog.h"

#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <cctype>

namespace oomlens::text {

namespace {

constexpr size_t maxPoints = 100000;

bool isWordStart(std::string_view line, size_t at)
{
    return at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
}

// The number after a word at a word boundary: "step  4430" -> 4430 (":", "=", "#" and spaces between).
std::optional<uint64_t> numberAfterWord(std::string_view line, std::string_view word, size_t* end = nullptr)
{
    for (size_t at = line.find(word); at != std::string_view::npos; at = line.find(word, at + 1)) {
        if (!isWordStart(line, at))
            continue;
        size_t pos = at + word.size();
        while (pos < line.size() && (line[pos] == ' ' || line[pos] == ':' || line[pos] == '=' || line[pos] == '#'))
            ++pos;
        size_t stop = 0;
        if (auto value = parseIntegerAt(line, pos, &stop)) {
            if (end)
                *end = stop;
            return value;
        }
    }
    return std::nullopt;
}

std::optional<uint64_t> sizeAfterWord(std::string_view line, std::string_view word)
{
    for (size_t at = line.find(word); at != std::string_view::npos; at = line.find(word, at + 1)) {
        if (!isWordStart(line, at))
            continue;
        size_t pos = at + word.size();
        while (pos < line.size() && (line[pos] == ' ' || line[pos] == ':' || line[pos] == '='))
            ++pos;
        if (auto size = parseSizeAt(line, pos); size && size->bytes)
            return size->bytes;
    }
    return std::nullopt;
}

std::optional<MemoryLogPoint> parsePoint(std::string_view line)
{
    if (line.size() > 1000 || contains(line, "File \"") || contains(line, "out of memory"))
        return std::nullopt;
    std::optional<uint64_t> step;
    for (std::string_view word : { "iter", "step", "Step", "iteration", "Iteration", "Iter" }) {
        if ((step = numberAfterWord(line, word)))
            break;
    }
    if (!step || *step > (uint64_t(1) << 40))
        return std::nullopt;
    MemoryLogPoint point;
    point.step = static_cast<int64_t>(*step);
    for (std::string_view word : { "allocated", "mem_allocated", "gpu_mem", "max_mem", "mem", "memory" }) {
        if ((point.bytes = sizeAfterWord(line, word)))
            break;
    }
    for (std::string_view word : { "seq_len", "seqlen", "seq", "max_len", "length" }) {
        if (auto value = numberAfterWord(line, word); value && *value < 100000000) {
            point.sequenceLength = value;
            break;
        }
    }
    size_t end = 0;
    if (auto first = numberAfterWord(line, "batch", &end)) {
        size_t stop = end;
        while (stop < line.size() && (std::isdigit(static_cast<unsigned char>(line[stop])) || line[stop] == 'x'))
            ++stop;
        const size_t begin = line.find(std::to_string(*first), line.find("batch"));
        if (begin != std::string_view::npos && begin < stop)
            point.batch = std::string(line.substr(begin, stop - begin));
    }
    if (!point.bytes && !point.sequenceLength)
        return std::nullopt;
    return point;
}

} // namespace

std::vector<MemoryLogPoint> findMemoryLog(const TextLines& lines)
{
    std::vector<MemoryLogPoint> points;
    for (size_t i = 0; i < lines.size() && points.size() < maxPoints; ++i) {
        // "iter", "Iteration", "step", "Step": one cheap test before the word-by-word reading.
        if (!contains(lines[i], "ter") && !contains(lines[i], "tep"))
            continue;
        if (auto point = parsePoint(lines[i])) {
            point->sourceLine = lines.lineNumber(i);
            points.push_back(std::move(*point));
        }
    }
    return points;
}

} // namespace oomlens::text
