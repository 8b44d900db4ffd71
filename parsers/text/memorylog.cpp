#include "parsers/text/memorylog.h"

#include "parsers/text/logfields.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <cctype>

namespace oomlens::text {

namespace {

constexpr size_t maxPoints = 100000;
constexpr uint64_t largestStep = uint64_t(1) << 40;
constexpr uint64_t longestSequence = 100000000;

bool endsWithPart(std::string_view key, std::string_view word)
{
    return key == word
        || (key.size() > word.size() && key.substr(key.size() - word.size()) == word
            && key[key.size() - word.size() - 1] == '_');
}

// The loop's counter: "iter 300", "Step [120/1000]", "global_step=4430", "batch_idx: 7".
bool isStepKey(std::string_view key)
{
    for (std::string_view word : { "iter", "iteration", "step", "steps", "batch_idx", "update", "num_updates" }) {
        if (endsWithPart(key, word))
            return true;
    }
    return false;
}

bool isThroughput(const LogField& field)
{
    return field.after.find('/') != std::string::npos || keyHasPart(field.key, "per") || keyHasPart(field.key, "sec")
        || keyHasPart(field.key, "s") || field.key.find("throughput") != std::string::npos;
}

// Host memory is printed beside the GPU's in many loops ("CPU Virtual Memory: used = 187.2 GB",
// "rss 12 GB"): never the card's.
bool isHostKey(std::string_view key)
{
    for (std::string_view word : { "cpu", "host", "ram", "rss", "virtual", "swap", "disk", "shm", "vms" }) {
        if (keyHasPart(key, word))
            return true;
    }
    return false;
}

// The card's memory under the loop's own name for it: "allocated", "mem", "max_mem", "gpu_mem",
// "memory_allocated", "max_memory_reserved", DeepSpeed's "MA" / "Max_CA", "vram", "mem_gb".
// Returns what it measures ("allocated", "reserved", "peak_allocated", "peak_reserved",
// "peak_memory", "memory"), empty when the name is not the card's memory.
std::string memoryMetric(std::string_view key)
{
    if (key.empty() || isHostKey(key))
        return {};
    const bool allocated = key.find("alloc") != std::string_view::npos || keyHasPart(key, "ma");
    const bool reserved = key.find("reserved") != std::string_view::npos || key.find("cache") != std::string_view::npos
        || keyHasPart(key, "ca");
    const bool memory = key.find("mem") != std::string_view::npos || keyHasPart(key, "vram") || keyHasPart(key, "gpu")
        || keyHasPart(key, "cuda");
    if (!allocated && !reserved && !memory)
        return {};
    const bool peak = keyHasPart(key, "max") || keyHasPart(key, "peak");
    const std::string what = allocated ? "allocated" : reserved ? "reserved" : "memory";
    if (peak)
        return "peak_" + what;
    return what;
}

// Which figure of a line to keep when it prints several: live tensors are what a leak grows, then
// the running peak of them, then an unnamed "mem", and the allocator's cache last.
int metricRank(std::string_view metric)
{
    for (int rank = 0; std::string_view candidate :
         { "allocated", "peak_allocated", "memory", "peak_memory", "reserved", "peak_reserved" }) {
        if (candidate == metric)
            return rank;
        ++rank;
    }
    return 99;
}

// The length every sequence of the batch is padded to: "seq_len 4096", "max_length=2048",
// "padded to 4096 tokens", "longest sample 4096", "ctx 8192".
bool isSequenceLength(const LogField& field)
{
    const std::string_view key = field.key;
    if (isThroughput(field) || key.find("lens") != std::string_view::npos)
        return false;
    return key.find("seq") != std::string_view::npos || endsWithPart(key, "len") || endsWithPart(key, "length")
        || key.find("longest") != std::string_view::npos || key.find("padded") != std::string_view::npos
        || endsWithPart(key, "ctx") || key.find("context") != std::string_view::npos;
}

// The batch's tokens as one count: "ntokens 3412" (fairseq), "tokens=32768", "32768 tokens".
bool isTokenCount(const LogField& field)
{
    if (isThroughput(field) || isSequenceLength(field))
        return false;
    const std::string_view key = field.key;
    return endsWithPart(key, "tokens") || endsWithPart(key, "ntokens") || endsWithPart(key, "tok")
        || field.after == "tokens" || field.after == "toks";
}

bool isWordStart(std::string_view line, size_t at)
{
    return at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
}

// The batch as printed after its name: "batch 16x512", "bs=32", "bsz 32", "batch_size: 8",
// "input_ids.shape=torch.Size([8, 4096])", "batch shape (8, 4096)". Returned as "16x512" or "32";
// empty when the name is followed by something else ("batch padded to ...", "batch 120/1000").
std::string batchShape(std::string_view line)
{
    for (std::string_view name : { "batch", "bsz", "bs", "shape", "Batch", "BS", "Shape" }) {
        for (size_t at = line.find(name); at != std::string_view::npos; at = line.find(name, at + 1)) {
            if (!isWordStart(line, at))
                continue;
            size_t pos = at + name.size();
            // "batch_size", "batch size", "batch shape", "micro_bs": the rest of the name.
            for (std::string_view rest : { "_size", " size", "_shape", " shape", "size", ".shape" }) {
                if (line.substr(pos, rest.size()) == rest) {
                    pos += rest.size();
                    break;
                }
            }
            if (pos < line.size() && (std::isalnum(static_cast<unsigned char>(line[pos])) || line[pos] == '_')
                && !std::isdigit(static_cast<unsigned char>(line[pos])))
                continue;
            while (pos < line.size() && (line[pos] == ' ' || line[pos] == ':' || line[pos] == '='))
                ++pos;
            if (line.substr(pos, 11) == "torch.Size(")
                pos += 11;
            while (pos < line.size() && (line[pos] == '(' || line[pos] == '['))
                ++pos;
            std::string shape;
            while (pos < line.size()) {
                size_t end = 0;
                const auto value = parseIntegerAt(line, pos, &end);
                if (!value || *value == 0 || *value > longestSequence)
                    break;
                if (!shape.empty())
                    shape += 'x';
                shape += std::to_string(*value);
                pos = end;
                size_t next = pos;
                while (next < line.size() && line[next] == ' ')
                    ++next;
                if (next < line.size() && (line[next] == 'x' || line[next] == ',' || line[next] == '*')) {
                    pos = next + 1;
                    continue;
                }
                break;
            }
            if (shape.empty() || (pos < line.size() && line[pos] == '/'))
                continue; // "batch 120/1000" counts batches, it is not one
            return shape;
        }
    }
    return {};
}

// A progress bar's counter when the line names none: tqdm as the HF Trainer and Lightning print it,
// "Epoch 0:  41%|####      | 410/1000 [05:12<07:29, 1.31it/s, loss=2.31, seq_len=512]".
std::optional<uint64_t> progressBarStep(std::string_view line)
{
    for (size_t bar = line.find("| "); bar != std::string_view::npos; bar = line.find("| ", bar + 1)) {
        size_t end = 0;
        const auto step = parseIntegerAt(line, bar + 2, &end);
        if (!step || end >= line.size() || line[end] != '/')
            continue;
        size_t totalEnd = 0;
        if (parseIntegerAt(line, end + 1, &totalEnd) && line.substr(totalEnd, 2) == " [")
            return step;
    }
    return std::nullopt;
}

std::optional<MemoryLogPoint> parsePoint(std::string_view line)
{
    if (line.size() > 1000 || contains(line, "File \"") || contains(line, "out of memory"))
        return std::nullopt;
    const std::vector<LogField> fields = logFields(line);
    std::optional<uint64_t> step;
    for (const LogField& field : fields) {
        if (field.integer && isStepKey(field.key)) {
            step = field.integer;
            break;
        }
    }
    if (!step)
        step = progressBarStep(line);
    if (!step || *step > largestStep)
        return std::nullopt;
    MemoryLogPoint point;
    point.step = static_cast<int64_t>(*step);
    for (const LogField& field : fields) {
        if (!field.bytes) {
            // torch.cuda.memory_allocated() printed as it returns, in bytes.
            if (!field.integer || *field.integer < (uint64_t(1) << 20)
                || (field.key.find("bytes") == std::string::npos && field.key.find("memory_") != 0
                    && field.key.find("max_memory_") != 0))
                continue;
        }
        const std::string metric = memoryMetric(field.key);
        if (metric.empty() || (point.bytes && metricRank(metric) >= metricRank(point.bytesMetric)))
            continue;
        point.bytes = field.bytes ? field.bytes : field.integer;
        point.bytesMetric = metric;
    }
    for (const LogField& field : fields) {
        if (!field.integer || *field.integer == 0 || *field.integer > longestSequence)
            continue;
        if (!point.sequenceLength && isSequenceLength(field))
            point.sequenceLength = field.integer;
        else if (!point.tokens && isTokenCount(field))
            point.tokens = field.integer;
    }
    point.batch = batchShape(line);
    const bool shape = point.batch.find('x') != std::string::npos;
    if (!point.bytes && !point.sequenceLength && !point.tokens && !shape)
        return std::nullopt;
    return point;
}

// A cheap test before the field-by-field reading: the line names a counter.
bool mayNameStep(std::string_view line)
{
    for (std::string_view word : { "ter", "tep", "TER", "TEP", "idx", "pdate", "it/s" }) {
        if (contains(line, word))
            return true;
    }
    return false;
}

} // namespace

std::vector<MemoryLogPoint> findMemoryLog(const TextLines& lines)
{
    std::vector<MemoryLogPoint> points;
    for (size_t i = 0; i < lines.size() && points.size() < maxPoints; ++i) {
        if (!mayNameStep(lines[i]))
            continue;
        if (auto point = parsePoint(lines[i])) {
            point->sourceLine = lines.lineNumber(i);
            points.push_back(std::move(*point));
        }
    }
    return points;
}

} // namespace oomlens::text
