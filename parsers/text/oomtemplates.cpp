#include "parsers/text/oomtemplates.h"

#include "core/strings.h"
#include "parsers/text/oomfields.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <string>

namespace oomlens::text {

namespace {

void addReservedFromParts(OomMessage& message)
{
    if (message.allocatedBytes && message.reservedUnallocatedBytes)
        message.reservedBytes = *message.allocatedBytes + *message.reservedUnallocatedBytes;
}

// One "<subject> has <size>" clause: "this process" or "Process N", else nothing.
std::optional<ProcessUsage> processClause(std::string_view body, size_t hasAt, OomMessage& message)
{
    const size_t sentence = body.rfind(". ", hasAt);
    const size_t start = sentence == std::string_view::npos ? 0 : sentence + 2;
    const std::string_view subject = body.substr(start, hasAt - start);
    ProcessUsage usage;
    if (contains(subject, "this process")) {
        usage.self = true;
    } else if (subject.starts_with("Process ")) {
        if (auto pid = parseIntegerAt(subject, 8))
            usage.pid = static_cast<int64_t>(*pid);
    } else {
        return std::nullopt;
    }
    const auto size = parseSizeAt(body, hasAt + 5);
    if (size && size->garbage) {
        message.notes.push_back(std::string(usage.self ? "this process" : "a process")
            + "'s memory is printed as 17179869184.00 GiB (2^64): NVML could not read "
              "it (WDDM or a container), so it is left empty");
    } else if (size) {
        usage.bytes = size->bytes;
    }
    return usage;
}

// A paste cut inside the last clause ("... Process 1079173 has 6.04 GiB"): the size is whole, only
// " memory in use" is missing, so the process is still read.
void parseCutProcess(std::string_view body, OomMessage& message)
{
    static constexpr std::string_view memoryInUse = " memory in use";
    const size_t hasAt = body.rfind(" has ");
    if (hasAt == std::string_view::npos || body.find(memoryInUse, hasAt) != std::string_view::npos)
        return;
    const auto size = parseSizeAt(body, hasAt + 5);
    if (!size)
        return;
    std::string_view rest = body.substr(size->end);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
        rest.remove_suffix(1);
    if (!memoryInUse.starts_with(rest))
        return;
    if (auto usage = processClause(body, hasAt, message))
        message.processes.push_back(*usage);
}

void parseProcesses(std::string_view body, OomMessage& message)
{
    static constexpr std::string_view memoryInUse = " memory in use";
    size_t at = 0;
    while ((at = body.find(memoryInUse, at)) != std::string_view::npos) {
        const size_t hasAt = body.rfind(" has ", at);
        const size_t sentence = body.rfind(". ", at);
        if (hasAt != std::string_view::npos && (sentence == std::string_view::npos || sentence < hasAt)) {
            if (auto usage = processClause(body, hasAt, message))
                message.processes.push_back(*usage);
        }
        at += memoryInUse.size();
    }
    parseCutProcess(body, message);
}

// "(GPU 0; 14.76 GiB total capacity; 9.94 GiB already allocated; 3.89 GiB free; 160.79 MiB cached)"
void parseParenthesisedClauses(
    std::string_view body, size_t open, OomMessage& message, bool& sawCached, bool& sawReserved)
{
    std::optional<uint64_t> cached;
    size_t close = body.find(')', open);
    const std::string_view inside
        = body.substr(open + 1, close == std::string_view::npos ? std::string_view::npos : close - open - 1);
    size_t clauseBegin = 0;
    int index = 0;
    while (clauseBegin <= inside.size()) {
        size_t clauseEnd = inside.find(';', clauseBegin);
        if (clauseEnd == std::string_view::npos)
            clauseEnd = inside.size();
        const std::string_view clause = trimmed(inside.substr(clauseBegin, clauseEnd - clauseBegin));
        if (index == 0) {
            const size_t space = clause.find(' ');
            if (space != std::string_view::npos) {
                if (auto device = parseIntegerAt(clause, space + 1); device && *device < 100000)
                    message.device = static_cast<int>(*device);
            }
        } else if (auto size = parseSizeAt(clause, 0)) {
            const std::string_view rest = trimmed(clause.substr(size->end));
            if (rest == "total capacity")
                setSize(message.totalBytes, size, message, "the total capacity");
            else if (rest == "already allocated")
                setSize(message.allocatedBytes, size, message, "the allocated memory");
            else if (rest == "free")
                setSize(message.freeBytes, size, message, "the free memory");
            else if (rest == "allowed")
                setSize(message.allowedBytes, size, message, "the allowed memory");
            else if (rest.starts_with("reserved in total")) {
                setSize(message.reservedBytes, size, message, "the reserved memory");
                sawReserved = true;
            } else if (rest == "cached") {
                setSize(cached, size, message, "the cached memory");
                sawCached = true;
            } else if (rest == "current active") {
                message.notes.push_back("the message also reports " + std::string(clause));
            }
        }
        ++index;
        clauseBegin = clauseEnd + 1;
    }
    if (sawCached) {
        // The oldest wording reports the cache beside the allocated bytes: reserved = both.
        message.reservedUnallocatedBytes = cached;
        if (message.allocatedBytes && cached)
            message.reservedBytes = *message.allocatedBytes + *cached;
    } else if (message.reservedBytes && message.allocatedBytes) {
        if (*message.reservedBytes >= *message.allocatedBytes)
            message.reservedUnallocatedBytes = *message.reservedBytes - *message.allocatedBytes;
        else
            message.notes.push_back("the message reports more allocated than reserved memory; the numbers are "
                                    "inconsistent (unified memory or a driver quirk)");
    }
}

struct DeviceWord
{
    std::string_view word;
    Backend backend;
};

constexpr std::array<DeviceWord, 7> deviceWords { {
    { "CUDA", Backend::Cuda },
    { "HIP", Backend::Hip },
    { "XPU", Backend::Xpu },
    { "DPCPP", Backend::Xpu },
    { "NPU", Backend::Npu },
    { "MUSA", Backend::Musa },
    { "MLU", Backend::Mlu },
} };

// A caching-allocator message cut before its era shows, or a vendor plugin's copy of T1, is named
// after its backend.
OomTemplate templateNamedAfter(Backend backend)
{
    switch (backend) {
    case Backend::Xpu:
        return OomTemplate::Xpu;
    case Backend::Npu:
        return OomTemplate::Npu;
    case Backend::Musa:
        return OomTemplate::Musa;
    case Backend::Mlu:
        return OomTemplate::Mlu;
    case Backend::Cuda:
        return OomTemplate::Cuda;
    default:
        return OomTemplate::Unknown;
    }
}

// IPEX refuses any single block above 4 GB on GPUs without 2D block arrays (Arc A-series, Flex):
// "Current platform can NOT allocate memory block with size larger than 4GB! Tried to allocate 8.00 GiB
// (GPU  0; 15.56 GiB total capacity; 1.20 GiB already allocated; 1.50 GiB reserved in total by PyTorch)"
void parsePlatformLimit(std::string_view body, OomMessage& message)
{
    message.backend = Backend::Xpu;
    if (auto limit = sizeAfter(body, "size larger than "); limit && limit->bytes)
        message.platformLimitBytes = limit->bytes;
    message.notes.push_back("a per-allocation limit of the platform refused the request; the card was not "
                            "necessarily full");
}

// What a caching-allocator message's first words tell, read before its figures.
struct CachingLead
{
    std::string_view word; // the first word: the device's name, or "Tried" / "(GPU" when it was not pasted
    bool platformLimit = false; // IPEX's per-block limit
    size_t afterRequest = std::string_view::npos; // the end of "Tried to allocate N" (0: the paste starts at '(')
};

CachingLead readCachingLead(std::string_view body, OomMessage& message)
{
    CachingLead lead;
    lead.word = body.substr(0, body.find(' '));
    message.backend = Backend::Cuda;
    for (const auto& candidate : deviceWords) {
        if (candidate.word == lead.word)
            message.backend = candidate.backend;
    }
    lead.platformLimit = body.starts_with("Current platform can NOT allocate");
    const bool headless = lead.word == "Tried" || lead.word == "(GPU";
    if (lead.platformLimit)
        parsePlatformLimit(body, message);
    else if (headless)
        message.notes.push_back("the message's first words (\"CUDA out of memory.\") were not pasted; the backend "
                                "is assumed to be CUDA");
    const auto requested = sizeAfter(body, "Tried to allocate ");
    setSize(message.requestedBytes, requested, message, "the requested size");
    lead.afterRequest = requested ? requested->end : std::string_view::npos;
    if (!requested && lead.word == "(GPU")
        lead.afterRequest = 0; // only the parenthesis was pasted: its '(' is at the start
    return lead;
}

// The template of a parenthesised message (T0, T1 and the vendors' copies) and the versions that print it.
void classifyParenthesised(std::string_view body, const CachingLead& lead, bool sawCached, OomMessage& message)
{
    const bool hint = contains(body, "If reserved memory is >>");
    const bool closed = body.find(')', lead.afterRequest) != std::string_view::npos;
    if (lead.platformLimit) {
        message.templateId = OomTemplate::XpuBlockLimit;
    } else if (lead.word == "DPCPP") {
        message.templateId = OomTemplate::Dpcpp;
    } else if (lead.word == "NPU" || lead.word == "MUSA" || lead.word == "MLU") {
        message.templateId = templateNamedAfter(message.backend);
    } else if (sawCached) {
        message.templateId = OomTemplate::T0;
        setVersionHint(message, { 0, 103 });
    } else {
        message.templateId = OomTemplate::T1;
        if (hint)
            setVersionHint(message, { 110, 200 });
        else if (closed && contains(body, "reserved in total by PyTorch)"))
            setVersionHint(message, { 104, 109 });
        else
            setVersionHint(message, { 104, 200 });
    }
}

// "Tried to allocate N (GPU 0; ... total capacity; ... already allocated; ...)": PyTorch up to 2.0 and
// the vendor plugins' copies of it.
void parseParenthesised(std::string_view body, const CachingLead& lead, OomMessage& message)
{
    bool sawCached = false;
    bool sawReserved = false;
    parseParenthesisedClauses(
        body, lead.afterRequest == 0 ? 0 : lead.afterRequest + 1, message, sawCached, sawReserved);
    classifyParenthesised(body, lead, sawCached, message);
    // Old IPEX (DPCPP) and its block-limit message never print the free memory.
    const bool complete = message.requestedBytes && message.device && message.totalBytes && message.allocatedBytes
        && (message.freeBytes || lead.word == "DPCPP" || lead.platformLimit) && (sawCached || sawReserved);
    message.truncated = message.truncated || !complete;
}

// "Of the allocated memory X is allocated by PyTorch, with Y allocated in private pools (e.g., CUDA
// Graphs), and Z is reserved by PyTorch but unallocated."
void parseAllocatedSentence(std::string_view body, OomMessage& message)
{
    const size_t ofAllocated = body.find("Of the allocated memory ");
    if (ofAllocated == std::string_view::npos)
        return;
    setSize(message.allocatedBytes, sizeAfter(body, "Of the allocated memory ", ofAllocated), message,
        "the allocated memory");
    setSize(message.privatePoolsBytes, sizeAfter(body, "is allocated by PyTorch, with ", ofAllocated), message,
        "the private pools");
    for (size_t at = body.find("and ", ofAllocated); at != std::string_view::npos; at = body.find("and ", at + 4)) {
        const auto unallocated = parseSizeAt(body, at + 4);
        if (unallocated && contains(body.substr(unallocated->end, 40), "reserved by PyTorch but unallocated")) {
            setSize(message.reservedUnallocatedBytes, unallocated, message, "the reserved-but-unallocated memory");
            return;
        }
    }
}

// The template of a message in sentences (T2-T4, XPU) and the versions that print it.
void classifySentences(std::string_view body, bool typo, OomMessage& message)
{
    const bool v3 = contains(body, "#environment-variables)");
    const bool v4 = contains(body, "docs.pytorch.org") || contains(body, "#optimizing-memory-usage");
    if (message.backend == Backend::Xpu) {
        message.templateId = OomTemplate::Xpu;
        setVersionHint(message, { 204, openEnd });
    } else if (typo) {
        message.templateId = OomTemplate::T2;
        setVersionHint(message, { 201, 201 });
    } else if (v4) {
        message.templateId = OomTemplate::T4;
        setVersionHint(message, { 208, openEnd });
    } else if (v3) {
        message.templateId = OomTemplate::T3;
        setVersionHint(message, { 202, 207 });
    } else {
        // The URL that tells T3 from T4 was left out or cut off.
        message.templateId = OomTemplate::T3;
        setVersionHint(message, { 202, openEnd });
        message.notes.push_back("the documentation link is missing, so 2.2-2.7 (T3) and 2.8+ (T4) wording cannot "
                                "be told apart");
    }
}

// "Tried to allocate N. GPU 0 has a total capacity of ... of which ... is free. ...": PyTorch 2.1 on.
void parseSentences(std::string_view body, OomMessage& message)
{
    if (auto device = intAfter(body, ". GPU "))
        message.device = device;
    const bool typo = contains(body, "total capacty of ");
    setSize(message.totalBytes, sizeAfter(body, typo ? "total capacty of " : "total capacity of "), message,
        "the total capacity");
    setSize(message.freeBytes, sizeAfter(body, " of which "), message, "the free memory");
    parseProcesses(body, message);
    if (const size_t allowed = body.find(" allowed; "); allowed != std::string_view::npos)
        setSize(message.allowedBytes, sizeBefore(body, allowed), message, "the allowed memory");
    parseAllocatedSentence(body, message);
    // The allocated figure already includes private pools and the unallocated one is reserved
    // minus both (CUDACachingAllocator.cpp), so their sum is the whole reservation.
    addReservedFromParts(message);
    classifySentences(body, typo, message);
    const bool complete = message.requestedBytes && message.device && message.totalBytes && message.freeBytes
        && message.allocatedBytes && message.reservedUnallocatedBytes;
    message.truncated = message.truncated || !complete;
}

void parseCaching(std::string_view body, OomMessage& message)
{
    const CachingLead lead = readCachingLead(body, message);
    // The old wording opens a parenthesis right after the request; the new one writes sentences.
    const bool oldStyle = lead.afterRequest != std::string_view::npos
        && (lead.afterRequest == 0 ? body.front() == '(' : body.substr(lead.afterRequest, 2) == " (");
    const bool newStyle = contains(body, ". GPU ") || contains(body, "total capac");
    if (oldStyle) {
        parseParenthesised(body, lead, message);
    } else if (newStyle) {
        parseSentences(body, message);
    } else {
        // Cut before anything that tells the wording apart.
        message.templateId = lead.word == "DPCPP"
            ? OomTemplate::Dpcpp
            : (lead.word == "CUDA" || lead.word == "HIP" ? OomTemplate::Unknown : templateNamedAfter(message.backend));
        message.truncated = true;
    }
}

void parseMps(std::string_view body, OomMessage& message)
{
    message.backend = Backend::Mps;
    message.templateId = OomTemplate::Mps;
    const bool modern = contains(body, "(MPS allocated: ");
    setSize(message.allocatedBytes, sizeAfter(body, modern ? "MPS allocated: " : "currently allocated: "), message,
        "the allocated memory");
    setSize(message.otherAllocationsBytes, sizeAfter(body, "other allocations: "), message, "other allocations");
    setSize(message.allowedBytes, sizeAfter(body, "max allowed: "), message, "the allowed memory");
    setSize(message.requestedBytes, sizeAfter(body, "Tried to allocate "), message, "the requested size");
    if (const size_t on = body.find(" on private pool"); on != std::string_view::npos)
        message.notes.push_back("the request was for the private (GPU-only) pool");
    else if (body.find(" on shared pool") != std::string_view::npos)
        message.notes.push_back("the request was for the shared (CPU-visible) pool");
    if (contains(body, " GB") || contains(body, " MB") || contains(body, " KB"))
        message.notes.push_back("MPS prints KB/MB/GB but divides by 1024; the values are read as binary units");
    setVersionHint(message, modern ? VersionRange { 200, openEnd } : VersionRange { 112, 113 }, false);
    message.truncated = message.truncated || !(message.allocatedBytes && message.requestedBytes);
}

void parseMallocAsync(std::string_view body, OomMessage& message)
{
    message.backend = Backend::Cuda;
    message.templateId = OomTemplate::CudaMallocAsync;
    message.device = intAfter(body, "Allocation on device ");
    setSize(message.allocatedBytes, sizeAfter(body, "Currently allocated :"), message, "the allocated memory");
    setSize(message.requestedBytes, sizeAfter(body, "Requested :"), message, "the requested size");
    setSize(message.totalBytes, sizeAfter(body, "Device limit :"), message, "the device limit");
    setSize(message.freeBytes, sizeAfter(body, "Free (according to CUDA):"), message, "the free memory");
    if (const auto limit = sizeAfter(body, "memory fraction) :"); limit) {
        if (limit->garbage)
            message.notes.push_back("no memory fraction is set (PyTorch prints the unlimited limit as 2^64)");
        else
            message.allowedBytes = limit->bytes;
    }
    setVersionHint(message, { 200, openEnd });
    // "Allocation on device " and nothing more is the whole message as Python shows it (the device
    // byte was a NUL): nothing was cut from the paste.
    const size_t device = body.find("Allocation on device");
    const std::string_view afterDevice
        = device == std::string_view::npos ? std::string_view {} : trimmed(body.substr(device + 20));
    const bool endedByDeviceByte = !contains(body, "would exceed") && (afterDevice.empty() || !isDigit(afterDevice[0]));
    message.truncated = message.truncated
        || (!endedByDeviceByte
            && !(message.allocatedBytes && message.requestedBytes && message.totalBytes && message.freeBytes));
}

// The fixed wording each family ends with; used to tell a cut paste from a trimmed one.
std::string_view fixedWording(OomFamily family)
{
    switch (family) {
    case OomFamily::Caching:
        return "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation. See "
               "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF If reserved but unallocated memory "
               "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation. See "
               "documentation for Memory Management (https://pytorch.org/docs/stable/notes/cuda.html#environment-"
               "variables) Please use `empty_cache` to release all unoccupied cached memory. total capacity "
               "capacty already allocated free cached reserved in total by PyTorch is allocated by PyTorch, and is "
               "reserved by PyTorch but unallocated. Including non-PyTorch memory, this process has memory in use. "
               "Process Of the allocated memory with allocated in private pools (e.g., CUDA Graphs), GPU has a of "
               "which is free. Tried to allocate PYTORCH_HIP_ALLOC_CONF=expandable_segments:True";
    case OomFamily::Mps:
        return "Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may cause "
               "system failure). on private pool. shared pool.";
    default:
        return {};
    }
}

} // namespace

void parseOomFields(OomFamily family, std::string_view body, OomMessage& message)
{
    switch (family) {
    case OomFamily::Caching:
        parseCaching(body, message);
        break;
    case OomFamily::Mps:
        parseMps(body, message);
        break;
    case OomFamily::MallocAsync:
        parseMallocAsync(body, message);
        break;
    case OomFamily::Xla:
        parseXla(body, message);
        break;
    case OomFamily::Tf:
        parseTf(body, message);
        break;
    case OomFamily::Bfc:
        parseBfc(body, message);
        break;
    default:
        parseNearOom(family, body, message);
        break;
    }
}

bool oomMessageComplete(OomFamily family, std::string_view body)
{
    switch (family) {
    case OomFamily::Caching:
        for (std::string_view end : { "cached)", "variables)", "alloc-conf)", "Management and PYTORCH_CUDA_ALLOC_CONF",
                 "unoccupied cached memory.", "to avoid fragmentation." }) {
            if (contains(body, end) && (end != "to avoid fragmentation." || contains(body, "reserved in total")))
                return true;
        }
        return body.ends_with("reserved in total by PyTorch)");
    case OomFamily::Mps:
        return contains(body, "(may cause system failure).")
            || (contains(body, " pool.") && !contains(body, "max allowed"));
    case OomFamily::MallocAsync: {
        const size_t limit = body.find("memory fraction) :");
        return limit != std::string_view::npos && parseSizeAt(body, limit + 18).has_value();
    }
    case OomFamily::Xla:
        return contains(body, "bytes") || contains(body, "iB.");
    default:
        return true;
    }
}

size_t oomMessageEnd(OomFamily family, std::string_view body)
{
    auto after = [&](std::string_view marker) -> size_t {
        const size_t at = body.find(marker);
        return at == std::string_view::npos ? std::string_view::npos : at + marker.size();
    };
    switch (family) {
    case OomFamily::Caching: {
        size_t end = std::string_view::npos;
        for (std::string_view marker : { "cached)", "#environment-variables)", "-alloc-conf)",
                 "Management and PYTORCH_CUDA_ALLOC_CONF", "unoccupied cached memory." })
            end = std::min(end, after(marker));
        if (end == std::string_view::npos) {
            // T1 without its hint ends at the parenthesis; anything after it is someone else's text.
            const size_t reserved = after("reserved in total by PyTorch)");
            if (reserved != std::string_view::npos && !body.substr(reserved).starts_with(" If reserved"))
                end = reserved;
            else if (const size_t npuHint = after("to avoid fragmentation."); npuHint != std::string_view::npos)
                end = npuHint;
        }
        return end;
    }
    case OomFamily::Mps:
        return after("(may cause system failure).");
    case OomFamily::MallocAsync: {
        const size_t limit = body.find("memory fraction) :");
        if (limit != std::string_view::npos) {
            if (auto size = parseSizeAt(body, limit + 18))
                return size->end;
        }
        return std::string_view::npos;
    }
    case OomFamily::Xla:
        return after("bytes.");
    default:
        return std::string_view::npos;
    }
}

bool endsMidWord(OomFamily family, std::string_view body)
{
    const std::string_view wording = fixedWording(family);
    if (wording.empty() || body.empty())
        return false;
    const size_t space = body.rfind(' ');
    const std::string_view last = space == std::string_view::npos ? body : body.substr(space + 1);
    if (last.empty() || isDigit(last.front()))
        return false;
    // A complete word of the fixed wording means the text could have been trimmed by hand there.
    size_t at = 0;
    while ((at = wording.find(last, at)) != std::string_view::npos) {
        const bool startOk = at == 0 || wording[at - 1] == ' ';
        const size_t end = at + last.size();
        const bool endOk = end == wording.size() || wording[end] == ' ';
        if (startOk && endOk)
            return false;
        ++at;
    }
    return true;
}

} // namespace oomlens::text
