#include "parsers/text/oomfields.h"

#include "core/strings.h"
#include "parsers/text/oomtemplates.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <array>
#include <string>

namespace oomlens::text {

namespace {

std::string versionText(int version)
{
    return std::to_string(version / 100) + '.' + std::to_string(version % 100);
}

std::string rangeText(VersionRange range)
{
    if (range.low == 0 && range.high == openEnd)
        return {};
    if (range.low == 0)
        return "<=" + versionText(range.high);
    if (range.high == openEnd)
        return versionText(range.low) + '+';
    if (range.low == range.high)
        return versionText(range.low);
    return versionText(range.low) + '-' + versionText(range.high);
}

// The printed exception class tells the era too (formats.md §2.1).
VersionRange exceptionRange(std::string_view exception)
{
    if (exception == "RuntimeError")
        return { 0, 112 };
    if (exception == "torch.cuda.OutOfMemoryError")
        return { 113, 204 };
    if (exception == "torch.OutOfMemoryError")
        return { 205, openEnd };
    if (exception == "OutOfMemoryError")
        return { 113, openEnd };
    return {};
}

uint64_t dtypeBytes(std::string_view type)
{
    static constexpr std::array<std::pair<std::string_view, uint64_t>, 14> sizes { {
        { "float", 4 },
        { "double", 8 },
        { "half", 2 },
        { "bfloat16", 2 },
        { "int8", 1 },
        { "uint8", 1 },
        { "bool", 1 },
        { "int16", 2 },
        { "uint16", 2 },
        { "int32", 4 },
        { "uint32", 4 },
        { "int64", 8 },
        { "uint64", 8 },
        { "complex64", 8 },
    } };
    for (const auto& [name, bytes] : sizes) {
        if (name == type)
            return bytes;
    }
    return 0;
}

} // namespace

void setVersionHint(OomMessage& message, VersionRange range, bool byClass)
{
    const VersionRange byException = byClass ? exceptionRange(message.exception) : VersionRange {};
    const VersionRange both { std::max(range.low, byException.low), std::min(range.high, byException.high) };
    if (both.low <= both.high) {
        message.torchVersionHint = rangeText(both);
    } else {
        message.torchVersionHint = rangeText(range);
        message.notes.push_back(
            "the exception class " + message.exception + " does not belong to the era of this message's wording");
    }
}

std::optional<int> intAfter(std::string_view text, std::string_view marker, size_t from)
{
    const size_t at = text.find(marker, from);
    if (at == std::string_view::npos)
        return std::nullopt;
    const auto value = parseIntegerAt(text, at + marker.size());
    if (!value || *value > 1000000)
        return std::nullopt;
    return static_cast<int>(*value);
}

std::optional<SizeToken> sizeBefore(std::string_view text, size_t markerPos)
{
    size_t begin = markerPos;
    while (begin > 0 && text[begin - 1] == ' ')
        --begin;
    // Step back over the unit, the space and the number.
    while (begin > 0 && text[begin - 1] != ' ')
        --begin;
    if (begin > 0 && text[begin - 1] == ' ')
        --begin;
    while (begin > 0 && (isDigit(text[begin - 1]) || text[begin - 1] == '.'))
        --begin;
    auto token = parseSizeAt(text, begin);
    if (!token || token->end > markerPos)
        return std::nullopt;
    return token;
}

void setSize(
    std::optional<uint64_t>& field, const std::optional<SizeToken>& token, OomMessage& message, std::string_view what)
{
    if (!token)
        return;
    if (token->garbage) {
        message.notes.push_back(std::string(what)
            + " is printed as an impossible value (about 2^64 bytes): the driver did not "
              "report it, so it is left empty");
        return;
    }
    field = token->bytes;
}

void parseXla(std::string_view body, OomMessage& message)
{
    message.backend = Backend::Xla;
    message.templateId = OomTemplate::Xla;
    for (std::string_view marker :
        { "trying to allocate ", "failed to allocate ", "allocate request for ", "allocating ", "allocate " }) {
        if (auto size = sizeAfter(body, marker); size) {
            setSize(message.requestedBytes, size, message, "the requested size");
            break;
        }
    }
    // The cudaMallocAsync flavour of XLA reports "Free memory/Total memory: F/T".
    if (const size_t at = body.find("Free memory/Total memory: "); at != std::string_view::npos) {
        size_t slash = 0;
        if (auto free = parseIntegerAt(body, at + 26, &slash); free && slash < body.size() && body[slash] == '/') {
            message.freeBytes = free;
            message.totalBytes = parseIntegerAt(body, slash + 1);
        }
    }
    message.truncated = message.truncated || !message.requestedBytes;
}

void parseBfc(std::string_view body, OomMessage& message)
{
    // The allocator is shared by TensorFlow and JAX/XLA; the source path in the log line tells which.
    message.backend = contains(body, "tensorflow/") ? Backend::Tf : Backend::Xla;
    message.templateId = OomTemplate::Bfc;
    setSize(message.requestedBytes, sizeAfter(body, "trying to allocate "), message, "the requested size");
    if (auto device = intAfter(body, "(GPU_"))
        message.device = device;
    message.truncated = message.truncated || !message.requestedBytes;
}

void parseTf(std::string_view body, OomMessage& message)
{
    message.backend = Backend::Tf;
    message.templateId = OomTemplate::Tf;
    // TF prints the shape, not a byte count; shape x element size is exactly what it asked for.
    const size_t open = body.find("shape[");
    const size_t close = open == std::string_view::npos ? open : body.find(']', open);
    const size_t typeAt = body.find(" and type ");
    if (open != std::string_view::npos && close != std::string_view::npos && typeAt != std::string_view::npos) {
        const std::string_view dims = body.substr(open + 6, close - open - 6);
        const size_t typeEnd = body.find(' ', typeAt + 10);
        const std::string_view type = body.substr(
            typeAt + 10, typeEnd == std::string_view::npos ? std::string_view::npos : typeEnd - typeAt - 10);
        uint64_t bytes = dtypeBytes(type);
        bool ok = bytes != 0;
        size_t at = 0;
        while (ok && at <= dims.size()) {
            size_t end = 0;
            const auto dim = parseIntegerAt(dims, at, &end);
            if (!dim || __builtin_mul_overflow(bytes, *dim, &bytes))
                ok = false;
            at = end;
            if (at >= dims.size())
                break;
            if (dims[at] != ',')
                ok = false;
            ++at;
        }
        if (ok)
            message.requestedBytes = bytes;
        else
            message.notes.push_back("the tensor's byte size cannot be computed from shape[" + std::string(dims)
                + "] and type " + std::string(type));
    }
    if (auto device = intAfter(body, "device:GPU:"))
        message.device = device;
    // The device clause comes last; without it the type name itself may be cut ("flo").
    message.truncated = message.truncated || close == std::string_view::npos || typeAt == std::string_view::npos
        || !contains(body.substr(typeAt), " on ");
}

void parseNearOom(OomFamily family, std::string_view body, OomMessage& message)
{
    message.probable = true;
    switch (family) {
    case OomFamily::CudaRuntime:
        message.backend = body.starts_with("HIP") ? Backend::Hip : Backend::CudaRuntime;
        message.templateId = body.starts_with("HIP") ? OomTemplate::HipRuntime : OomTemplate::CudaRuntime;
        refineFromRuntimeTail(body, message);
        break;
    case OomFamily::CudaDriver:
        message.backend = Backend::CudaRuntime;
        message.templateId = OomTemplate::CudaDriver;
        break;
    case OomFamily::Thc:
        message.backend = Backend::CudaRuntime;
        message.templateId = OomTemplate::Thc;
        message.torchVersionHint = "Lua Torch / THC";
        break;
    case OomFamily::Cublas:
        message.backend = Backend::Cublas;
        message.templateId = OomTemplate::Cublas;
        if (contains(body, "CUBLAS_STATUS_NOT_INITIALIZED"))
            message.notes.push_back("CUBLAS_STATUS_NOT_INITIALIZED at handle creation usually means no memory was "
                                    "left for the cuBLAS workspace");
        break;
    case OomFamily::Cudnn:
        message.backend = Backend::Cudnn;
        message.templateId = OomTemplate::Cudnn;
        if (contains(body, "CUDNN_STATUS_NOT_SUPPORTED"))
            message.notes.push_back("CUDNN_STATUS_NOT_SUPPORTED is ambiguous: a non-contiguous input or a "
                                    "workspace that did not fit");
        break;
    case OomFamily::Cpu:
        message.backend = Backend::Cpu;
        message.templateId = OomTemplate::Cpu;
        setSize(message.requestedBytes, sizeAfter(body, "you tried to allocate "), message, "the requested size");
        break;
    case OomFamily::LevelZero:
        message.backend = Backend::Xpu;
        message.templateId = OomTemplate::LevelZero;
        break;
    default:
        break;
    }
}

void refineFromRuntimeTail(std::string_view tail, OomMessage& message)
{
    if (contains(tail, "TORCH_USE_CUDA_DSA"))
        setVersionHint(message, { 200, openEnd }, false);
    else if (contains(tail, "API call,so"))
        setVersionHint(message, { 0, 113 }, false);
}

} // namespace oomlens::text
