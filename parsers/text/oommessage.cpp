#include "parsers/text/oommessage.h"

#include "core/strings.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"
#include "parsers/text/xlastats.h"

#include <algorithm>
#include <array>
#include <optional>

namespace oomlens::text {

namespace {

constexpr size_t maxMessageLines = 12;
constexpr size_t maxMessageBytes = 8192;
constexpr size_t repeatWindowLines = 400;

struct Anchor
{
    OomFamily family;
    size_t pos;
};

void consider(std::optional<Anchor>& best, OomFamily family, size_t pos)
{
    if (!best || pos < best->pos)
        best = Anchor { family, pos };
}

size_t startOf(std::string_view line, size_t pos, std::string_view lead)
{
    if (pos >= lead.size() && line.substr(pos - lead.size(), lead.size()) == lead)
        return pos - lead.size();
    return pos;
}

bool mentionsMemory(std::string_view text)
{
    return contains(text, "emory") || contains(text, "EMORY") || contains(text, "llocat");
}

// Whether the line holds any word an anchor phrase contains: most log lines do not, and are
// not searched further.
bool mayHoldAnchor(std::string_view line)
{
    return contains(line, "emory") || contains(line, "RESOURCE_EXHAUSTED") || contains(line, "Resource exhausted")
        || contains(line, "OOM when") || contains(line, "STATUS_") || contains(line, "DefaultCPUAllocator")
        || contains(line, "OUT_OF_DEVICE_MEMORY") || contains(line, "total capac")
        || contains(line, "Allocation on device");
}

// The family of an "out of memory" at `at`, told by the words just before it.
void considerOutOfMemoryAt(std::string_view line, size_t at, std::optional<Anchor>& best)
{
    static constexpr std::array<std::string_view, 7> deviceWords { "CUDA", "HIP", "XPU", "DPCPP", "NPU", "MUSA",
        "MLU" };
    const std::string_view before = line.substr(0, at);
    if (before.ends_with("MPS backend ")) {
        consider(best, OomFamily::Mps, at - 12);
        return;
    }
    for (std::string_view word : deviceWords) {
        if (before.ends_with(" ") && before.substr(0, before.size() - 1).ends_with(word)) {
            consider(best, OomFamily::Caching, at - word.size() - 1);
            return;
        }
    }
    if (before.ends_with("CUDA error: ") || before.ends_with("HIP error: ")) {
        consider(best, OomFamily::CudaRuntime, at - (before.ends_with("HIP error: ") ? 11 : 12));
    } else if (before.ends_with("CUDA driver error: ")) {
        consider(best, OomFamily::CudaDriver, at - 19);
    } else if (before.ends_with("(") && contains(line, "would exceed allowed memory")) {
        const size_t allocation = line.find("Allocation on device");
        consider(best, OomFamily::MallocAsync, allocation == std::string_view::npos ? at : allocation);
    } else if (const size_t thc = before.find("cuda runtime error (2)"); thc != std::string_view::npos) {
        consider(best, OomFamily::Thc, thc);
    } else if (const size_t check = before.find("THCudaCheck FAIL"); check != std::string_view::npos) {
        consider(best, OomFamily::Thc, check);
    }
}

// Pastes that lost the message's first words keep their numbers: "Tried to allocate 2.00 MiB
// (GPU 0; ...)", "Tried to allocate 2.00 MiB. GPU 0 has a total capacity of ...", or the
// parenthesis alone. IPEX's per-block limit starts with its own words and then the same numbers.
void considerHeadlessCaching(std::string_view line, std::optional<Anchor>& best)
{
    if (const size_t at = line.find("Current platform can NOT allocate memory block"); at != std::string_view::npos)
        consider(best, OomFamily::Caching, at);
    else if (const size_t tried = line.find("Tried to allocate "); tried != std::string_view::npos
             && (contains(line.substr(tried), "total capacity") || contains(line.substr(tried), "total capacty")))
        consider(best, OomFamily::Caching, tried);
    else if (const size_t open = line.find("(GPU ");
             open != std::string_view::npos && contains(line.substr(open), " total capacity;"))
        consider(best, OomFamily::Caching, open);
}

// TF/XLA's BFC allocator logs the failed request before the exception; its stats follow.
void considerBfcLog(std::string_view line, std::optional<Anchor>& best)
{
    for (std::string_view marker : { "ran out of memory trying to allocate", "Ran out of memory trying to allocate" }) {
        if (const size_t at = line.find(marker); at != std::string_view::npos) {
            const size_t allocator = line.rfind("Allocator (", at);
            consider(best, OomFamily::Bfc, allocator == std::string_view::npos ? at : allocator);
        }
    }
}

// cudaMallocAsync prints the device index as a raw byte; device 0 is a NUL, which ends the
// message right there for Python: "torch.OutOfMemoryError: Allocation on device ".
void considerMallocAsyncCutByNul(std::string_view line, std::optional<Anchor>& best)
{
    if (const size_t at = line.find("Allocation on device"); at != std::string_view::npos
        && !contains(line, "would exceed allowed memory")
        && (contains(line, "OutOfMemoryError") || contains(line, "Exception Message")
            || contains(line, "Exception during processing")))
        consider(best, OomFamily::MallocAsync, at);
}

// TF names the tensor it could not allocate; XLA's wordings need a mention of memory, on this
// line or the next.
void considerTfAndXla(std::string_view line, std::string_view next, std::optional<Anchor>& best)
{
    if (const size_t at = line.find("OOM when allocating tensor"); at != std::string_view::npos) {
        consider(best, OomFamily::Tf, at);
        return;
    }
    for (std::string_view marker : { "RESOURCE_EXHAUSTED", "Resource exhausted",
             "Out of memory while trying to allocate", "Out of memory allocating" }) {
        const size_t at = line.find(marker);
        if (at != std::string_view::npos && (mentionsMemory(line.substr(at)) || mentionsMemory(next)))
            consider(best, OomFamily::Xla, at);
    }
}

// The status codes of cuBLAS, cuDNN, the CPU allocator and Level Zero.
void considerStatusCodes(std::string_view line, std::optional<Anchor>& best)
{
    for (std::string_view status : { "CUBLAS_STATUS_ALLOC_FAILED", "CUBLAS_STATUS_NOT_INITIALIZED" }) {
        if (const size_t at = line.find(status); at != std::string_view::npos)
            consider(best, OomFamily::Cublas, startOf(line, at, "CUDA error: "));
    }
    for (std::string_view status :
        { "CUDNN_STATUS_NOT_SUPPORTED", "CUDNN_STATUS_ALLOC_FAILED", "CUDNN_STATUS_INTERNAL_ERROR" }) {
        if (const size_t at = line.find(status); at != std::string_view::npos)
            consider(best, OomFamily::Cudnn, startOf(line, at, "cuDNN error: "));
    }
    if (const size_t at = line.find("DefaultCPUAllocator: "); at != std::string_view::npos)
        consider(best, OomFamily::Cpu, at);
    if (const size_t at = line.find("UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"); at != std::string_view::npos)
        consider(best, OomFamily::LevelZero, at);
}

// The phrase that starts an OOM message in this line, if any: the earliest of every family's
// (on a tie, the first considered). `next` is the following line, for messages a terminal broke
// in two ("Resource exhausted: Out" / "of memory while ...").
std::optional<Anchor> findAnchor(std::string_view line, std::string_view next)
{
    if (!mayHoldAnchor(line))
        return std::nullopt;
    std::optional<Anchor> best;
    // Later occurrences start later: the first one that names a family is the one.
    for (size_t at = line.find("out of memory"); at != std::string_view::npos && !best;
         at = line.find("out of memory", at + 1))
        considerOutOfMemoryAt(line, at, best);
    if (!best)
        considerHeadlessCaching(line, best);
    considerBfcLog(line, best);
    considerMallocAsyncCutByNul(line, best);
    considerTfAndXla(line, next, best);
    considerStatusCodes(line, best);
    return best;
}

bool isIdentifierChar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

bool looksLikeExceptionClass(std::string_view name)
{
    return name.ends_with("Error") || name.ends_with("Exception") || name.ends_with("Exhausted");
}

// "torch.OutOfMemoryError: CUDA out of memory" -> "torch.OutOfMemoryError", with where it starts.
std::string_view exceptionBefore(std::string_view line, size_t anchor, size_t* begin)
{
    std::string_view before = line.substr(0, anchor);
    while (!before.empty() && before.back() == ' ')
        before.remove_suffix(1);
    if (before.empty() || before.back() != ':')
        return {};
    before.remove_suffix(1);
    size_t start = before.size();
    while (start > 0 && isIdentifierChar(before[start - 1]))
        --start;
    const std::string_view name = before.substr(start);
    if (!looksLikeExceptionClass(name))
        return {};
    *begin = start;
    return name;
}

// Lines that cannot be the continuation of a re-wrapped message.
bool isStructural(std::string_view line)
{
    const std::string_view text = trimmed(line);
    if (text.empty())
        return true;
    for (std::string_view lead : { "```", "~~~", "Traceback (most recent", "File \"", "During handling",
             "The above exception", "Exception raised from", "frame #", "|", "---", "===", "___",
             "Exception has occurred", "ERROR", "WARNING", "INFO", "DEBUG", ">>>", "$ " }) {
        if (text.starts_with(lead))
            return true;
    }
    if (text.size() > 2 && text[0] == '[' && text[1] >= '0' && text[1] <= '9')
        return true;
    // glog lines: "E1103 18:23:55.103186 ..."
    if (text.size() > 6 && (text[0] == 'E' || text[0] == 'W' || text[0] == 'I' || text[0] == 'F')) {
        bool digits = true;
        for (size_t i = 1; i < 5; ++i)
            digits = digits && text[i] >= '0' && text[i] <= '9';
        if (digits)
            return true;
    }
    // A log timestamp: "2024-08-21 ..."
    if (text.size() > 10 && text[4] == '-' && text[7] == '-' && text[0] >= '0' && text[0] <= '9')
        return true;
    return false;
}

bool isParagraphFamily(OomFamily family)
{
    return family == OomFamily::Caching || family == OomFamily::Mps || family == OomFamily::MallocAsync
        || family == OomFamily::Xla;
}

// After a finished sentence only the family's own wording may follow on the next line;
// anything else is the next log line, not a wrapped part of the message.
bool continuesMessage(OomFamily family, std::string_view sofar, std::string_view nextLine)
{
    const std::string_view next = trimmed(nextLine);
    if (family == OomFamily::MallocAsync) {
        for (std::string_view lead :
            { "Currently allocated", "Requested", "Device limit", "Free (according", "PyTorch limit", ":" }) {
            if (next.starts_with(lead))
                return true;
        }
        return false;
    }
    if (family == OomFamily::Xla)
        return contains(next, "emory") || contains(next, "bytes") || contains(next, "allocat");
    const char last = sofar.empty() ? '.' : sofar.back();
    if (last != '.' && last != ')')
        return true;
    for (std::string_view lead : { "If ", "See ", "(https", "Of the", "Including", "Process ", "GPU ", "Tried",
             "documentation", "fragmentation", "Please", "Use ", "and ", "is ", "with " }) {
        if (next.starts_with(lead))
            return true;
    }
    return false;
}

bool onlyBlankAfter(const TextLines& lines, size_t index)
{
    for (size_t i = index + 1; i < lines.size(); ++i) {
        const std::string_view text = trimmed(lines[i]);
        if (!text.empty() && !text.starts_with("```") && !text.starts_with("~~~") && text != "`")
            return false;
    }
    return true;
}

// "Exception raised from malloc at ...:NNN (most recent call first):" + "frame #N: ..." lines.
size_t skipCppTail(const TextLines& lines, size_t last, OomMessage& message)
{
    if (last + 1 >= lines.size() || !trimmed(lines[last + 1]).starts_with("Exception raised from"))
        return last;
    ++last;
    while (last + 1 < lines.size() && trimmed(lines[last + 1]).starts_with("frame #"))
        ++last;
    message.notes.push_back("the C++ stack trace after the message (\"Exception raised from ...\") was left out");
    const std::string_view final = trimmed(lines[last]);
    if (last + 1 == lines.size() && final.starts_with("frame #") && !final.ends_with(")"))
        message.truncated = true;
    return last;
}

void attachRematerialization(const TextLines& lines, size_t index, OomMessage& message)
{
    const size_t from = index > 6 ? index - 6 : 0;
    for (size_t i = index + 1; i-- > from;) {
        const std::string_view line = lines[i];
        const size_t at = line.find("Can't reduce memory use below ");
        if (at == std::string_view::npos || !contains(line, "rematerialization"))
            continue;
        const auto limit = parseSizeAt(line, at + 30);
        if (limit && limit->bytes)
            message.allowedBytes = limit->bytes;
        const size_t reduced = line.find("only reduced to ");
        if (reduced != std::string_view::npos) {
            if (auto size = parseSizeAt(line, reduced + 16); size && size->bytes)
                message.notes.push_back("XLA rematerialization could only bring the program down to "
                    + std::to_string(*size->bytes) + " bytes, above the limit");
        }
        return;
    }
}

// The exception class before the anchor ("torch.OutOfMemoryError: ..."), else the one VS Code's
// debugger prints on the line above ("Exception has occurred: RuntimeError").
std::string exceptionOf(const TextLines& lines, size_t index, size_t anchorPos)
{
    size_t textBegin = anchorPos;
    std::string exception(exceptionBefore(lines[index], anchorPos, &textBegin));
    if (exception.empty() && index > 0) {
        const std::string_view above = trimmed(lines[index - 1]);
        if (above.starts_with("Exception has occurred: "))
            exception = std::string(trimmed(above.substr(24)));
    }
    return exception;
}

// The message's text as read from its input lines.
struct MessageText
{
    std::string raw; // the input's bytes from the message's start, its lines joined by '\n'
    std::string body; // `raw` with its whitespace normalized
    std::vector<size_t> bodyLengths; // the body's length after each input line it took
    size_t last = 0; // the last input line taken
};

// The text from the anchor on; a paragraph family's message goes on over the lines a terminal
// or a logger wrapped it into, until it is complete or the next line is something else.
MessageText gatherText(const TextLines& lines, size_t index, Anchor anchor, bool hasException)
{
    const std::string_view line = lines[index];
    const bool xla = anchor.family == OomFamily::Xla;
    // XLA puts the size before RESOURCE_EXHAUSTED in some wordings, so its whole log line is read
    // (minus the glog prefix); the others are read from the anchor phrase on.
    size_t bodyBegin = anchor.pos;
    if (xla && !hasException) {
        const size_t glog = line.rfind("] ", anchor.pos);
        bodyBegin = glog == std::string_view::npos ? 0 : glog + 2;
    }
    MessageText text;
    // Real messages are a few hundred bytes; a megabyte-long line must not make field scans slow.
    text.raw = std::string(line.substr(bodyBegin, maxMessageBytes));
    text.body = normalizedWhitespace(text.raw);
    text.bodyLengths = { text.body.size() };
    text.last = index;
    if (!isParagraphFamily(anchor.family))
        return text;
    while (
        text.last + 1 < lines.size() && text.last - index + 1 < maxMessageLines && text.raw.size() < maxMessageBytes) {
        const std::string_view nextLine = lines[text.last + 1];
        const bool xlaStats = xla && contains(nextLine, "Free memory/Total memory");
        if (oomMessageComplete(anchor.family, text.body) && !xlaStats)
            break;
        if (isStructural(nextLine) || (!xlaStats && !continuesMessage(anchor.family, text.body, nextLine)))
            break;
        const std::string_view after = text.last + 2 < lines.size() ? lines[text.last + 2] : std::string_view {};
        if (!xla && findAnchor(nextLine, after))
            break;
        text.raw += '\n';
        text.raw += nextLine;
        ++text.last;
        text.body = normalizedWhitespace(text.raw);
        text.bodyLengths.push_back(text.body.size());
    }
    return text;
}

// The message's last input line is the one its end falls on.
size_t lineOfEnd(const MessageText& text, size_t index, size_t messageSize)
{
    for (size_t k = 0; k < text.bodyLengths.size(); ++k) {
        if (text.bodyLengths[k] >= messageSize)
            return index + k;
    }
    return text.last;
}

// "[[{{node ...}}]]" and the report_tensor_allocations_upon_oom hint belong to a TF message.
size_t skipTfTail(const TextLines& lines, size_t last, OomMessage& message)
{
    while (last + 1 < lines.size()) {
        const std::string_view next = trimmed(lines[last + 1]);
        if (!next.starts_with("[[") && !next.starts_with("Hint:"))
            break;
        ++last;
        if (last + 1 == lines.size() && next.starts_with("Hint:") && !next.ends_with("."))
            message.truncated = true;
    }
    return last;
}

// The runtime-error boilerplate that follows "CUDA error: out of memory".
size_t skipRuntimeTail(const TextLines& lines, size_t last, OomFamily family, OomMessage& message)
{
    while (last + 1 < lines.size()) {
        const std::string_view next = trimmed(lines[last + 1]).substr(0, 200);
        bool tail = false;
        for (std::string_view lead : { "CUDA kernel errors might", "For debugging consider", "Compile with",
                 "[Search for", "cuda runtime error", "HIP kernel errors might" })
            tail = tail || contains(next, lead);
        if (!tail)
            break;
        ++last;
        if (family == OomFamily::CudaRuntime)
            refineFromRuntimeTail(next, message);
    }
    return last;
}

// The lines after the message that still belong to it: its family's tail, a C++ stack trace, XLA's
// buffer statistics.
size_t readTails(const TextLines& lines, size_t index, size_t last, OomFamily family, OomMessage& message)
{
    if (family == OomFamily::Tf)
        last = skipTfTail(lines, last, message);
    else if (!isParagraphFamily(family))
        last = skipRuntimeTail(lines, last, family, message);
    last = skipCppTail(lines, last, message);
    if (family == OomFamily::Xla) {
        attachRematerialization(lines, index, message);
        last = readXlaBufferStats(lines, last, message);
    }
    return last;
}

FoundOom assemble(const TextLines& lines, size_t index, Anchor anchor)
{
    FoundOom found;
    found.family = anchor.family;
    found.firstLine = index;
    OomMessage& message = found.message;
    message.sourceLine = lines.lineNumber(index);
    message.exception = exceptionOf(lines, index, anchor.pos);
    const MessageText text = gatherText(lines, index, anchor, !message.exception.empty());

    const size_t endAt = oomMessageEnd(anchor.family, text.body);
    const bool endMarkerFound = endAt != std::string_view::npos;
    const std::string_view core = trimmed(std::string_view(text.body).substr(0, std::min(text.body.size(), endAt)));
    parseOomFields(anchor.family, anchor.family == OomFamily::Xla ? std::string_view(text.body) : core, message);
    const size_t last = readTails(lines, index, lineOfEnd(text, index, core.size()), anchor.family, message);
    if (anchor.family == OomFamily::MallocAsync && !contains(core, "would exceed") && !message.truncated)
        message.notes.push_back("cudaMallocAsync printed the device index as a raw byte (a NUL for device 0), "
                                "which ends the message for Python: the allocated, requested and free figures "
                                "after it were never shown");
    if (!endMarkerFound && onlyBlankAfter(lines, last) && endsMidWord(anchor.family, core))
        message.truncated = true;

    found.lastLine = last;
    found.core = std::string(core);
    message.text = message.exception.empty() ? std::string(core) : message.exception + ": " + std::string(core);
    return found;
}

bool isRepeat(const TextLines& lines, const FoundOom& earlier, const FoundOom& later)
{
    // Lines of the input, not of `lines`: one rank's lines of an interleaved log are a subset, and
    // two of its failures far apart in the log are close in the subset.
    const size_t apart = lines.lineNumber(later.firstLine) - lines.lineNumber(earlier.lastLine);
    if (apart > repeatWindowLines || earlier.family != later.family)
        return false;
    const std::string& a = earlier.core;
    const std::string& b = later.core;
    if (a == b)
        return true;
    const size_t shorter = std::min(a.size(), b.size());
    return shorter >= 24 && a.compare(0, shorter, b, 0, shorter) == 0;
}

} // namespace

namespace {

// The paste ends inside the message's first words: "RuntimeError: CUDA out of" after a complete
// traceback. The words that are left still name the device and the kind; the message is the
// phrase they begin, read as such and marked cut. Only the input's last line, only an exception's
// text, and at least the device word and one more.
std::optional<FoundOom> messageCutInItsPhrase(const TextLines& lines)
{
    size_t last = lines.size();
    while (last > 0 && trimmed(lines[last - 1]).empty())
        --last;
    if (last == 0)
        return std::nullopt;
    const std::string_view line = trimmed(lines[last - 1]);
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos || colon == 0 || line.substr(0, colon).find(' ') != std::string_view::npos
        || !(line.substr(0, colon).ends_with("Error") || line.substr(0, colon).ends_with("Exception")))
        return std::nullopt;
    const std::string_view words = trimmed(line.substr(colon + 2));
    for (std::string_view phrase : { "CUDA out of memory.", "HIP out of memory.", "XPU out of memory.",
             "NPU out of memory.", "MPS backend out of memory", "CUDA error: out of memory" }) {
        if (words.size() >= phrase.find(' ') + 2 && words.size() < phrase.size() && phrase.starts_with(words)) {
            const std::string completed = std::string(line.substr(0, colon + 2)) + std::string(phrase);
            const TextLines alone(completed);
            const auto anchor = findAnchor(alone[0], {});
            if (!anchor)
                return std::nullopt;
            FoundOom message = assemble(alone, 0, *anchor);
            message.firstLine = message.lastLine = last - 1;
            message.message.sourceLine = lines.lineNumber(last - 1);
            message.message.text = std::string(line);
            message.message.truncated = true;
            message.message.notes.push_back("the input ends inside the message (\"" + std::string(words)
                + "\"): read as \"" + std::string(phrase) + "\" without its figures");
            return message;
        }
    }
    return std::nullopt;
}

} // namespace

std::vector<FoundOom> findOomMessages(const TextLines& lines)
{
    std::vector<FoundOom> found;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view next = i + 1 < lines.size() ? lines[i + 1] : std::string_view {};
        const auto anchor = findAnchor(lines[i], next);
        if (!anchor)
            continue;
        FoundOom message = assemble(lines, i, *anchor);
        i = message.lastLine;
        auto earlier = std::find_if(
            found.rbegin(), found.rend(), [&](const FoundOom& e) { return isRepeat(lines, e, message); });
        if (earlier != found.rend()) {
            // Keep the fuller copy's fields, the first one's position.
            if (earlier->message.truncated && !message.message.truncated) {
                const size_t sourceLine = earlier->message.sourceLine;
                const size_t firstLine = earlier->firstLine;
                const size_t lastLine = earlier->lastLine;
                auto repeats = std::move(earlier->repeatLines);
                *earlier = std::move(message);
                earlier->message.sourceLine = sourceLine;
                earlier->repeatLines = std::move(repeats);
                earlier->repeatLines.push_back(earlier->firstLine);
                earlier->firstLine = firstLine;
                earlier->lastLine = std::max(lastLine, earlier->lastLine);
            } else {
                earlier->repeatLines.push_back(message.firstLine);
            }
            continue;
        }
        found.push_back(std::move(message));
    }
    if (auto cut = messageCutInItsPhrase(lines); cut && (found.empty() || found.back().lastLine < cut->firstLine))
        found.push_back(std::move(*cut));
    foldBfcLogs(lines, found);
    for (FoundOom& message : found) {
        if (!message.repeatLines.empty())
            message.message.notes.push_back("the same message appears " + std::to_string(message.repeatLines.size() + 1)
                + " times in the input (a logger or test runner repeated it)");
    }
    return found;
}

} // namespace oomlens::text
