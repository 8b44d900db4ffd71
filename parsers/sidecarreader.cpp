#include "parsers/sidecarreader.h"

#include "core/job/ranksummaryfile.h"
#include "core/strings.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <unordered_set>

namespace oomlens {

namespace {

using json = nlohmann::json;

constexpr std::string_view sidecarSuffix = ".oomlens.json";
// A sidecar holds a few KB of text (nvidia-smi, one traceback); anything this big is not one.
constexpr size_t maxSidecarBytes = size_t(16) << 20;

constexpr std::array<std::string_view, 9> knownKeys = { "device_name", "total_memory_bytes", "nvidia_smi",
    "torch_version", "cuda_version", "alloc_conf", "rank", "world_size", "exception" };
// Keys no other JSON a user opens is likely to have; "rank" or "exception" alone could be any
// structured log line, which must stay text.
constexpr std::array<std::string_view, 4> distinctiveKeys
    = { "device_name", "total_memory_bytes", "nvidia_smi", "alloc_conf" };

std::string_view typeName(const json& value)
{
    return value.type_name();
}

std::string wrongType(std::string_view key, const json& value, std::string_view expected)
{
    return "'" + std::string(key) + "' is " + std::string(typeName(value)) + ", expected " + std::string(expected);
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the reader wants the rest.
// They quote the offending bytes raw, which may not be UTF-8 and would break the JSON export.
std::string plainJsonError(const std::string& what)
{
    const size_t bracket = what.find("] ");
    std::string message = bracket == std::string::npos ? what : what.substr(bracket + 2);
    for (char& c : message) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f)
            c = '?';
    }
    return message;
}

bool readText(const json& object, std::string_view key, std::optional<std::string>& into, std::string& error)
{
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return true;
    if (!it->is_string()) {
        error = wrongType(key, *it, "text");
        return false;
    }
    if (!it->get_ref<const std::string&>().empty())
        into = it->get<std::string>();
    return true;
}

// Python's json writes integers as integers, but a hand-edited file may hold 4.2e10.
bool readCount(const json& object, std::string_view key, std::optional<uint64_t>& into, std::string& error)
{
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return true;
    if (it->is_number_unsigned()) {
        into = it->get<uint64_t>();
        return true;
    }
    if (it->is_number_float()) {
        const double value = it->get<double>();
        if (value >= 0 && value < 1.8e19 && value == static_cast<double>(static_cast<uint64_t>(value))) {
            into = static_cast<uint64_t>(value);
            return true;
        }
    }
    error = it->is_number() ? "'" + std::string(key) + "' is " + it->dump() + ", expected a whole number ≥ 0"
                            : wrongType(key, *it, "a whole number");
    return false;
}

bool readSmallInt(const json& object, std::string_view key, std::optional<int>& into, std::string& error)
{
    std::optional<uint64_t> count;
    if (!readCount(object, key, count, error))
        return false;
    if (count) {
        if (*count > 1'000'000) {
            error = "'" + std::string(key) + "' is " + std::to_string(*count) + ", not a plausible rank or size";
            return false;
        }
        into = static_cast<int>(*count);
    }
    return true;
}

template <size_t N> bool hasKeyOf(const json& object, const std::array<std::string_view, N>& keys)
{
    return std::any_of(keys.begin(), keys.end(), [&](std::string_view key) { return object.contains(key); });
}

// The extension of the file name at the end of `path` (".gz"), empty when there is none.
std::string_view lastExtension(std::string_view path)
{
    const size_t slash = path.find_last_of('/');
    const size_t dot = path.find_last_of('.');
    if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash) || dot == slash + 1
        || dot == 0)
        return {};
    return path.substr(dot);
}

} // namespace

SidecarParseResult parseCaptureSidecar(std::string_view text, const std::string& sourcePath)
{
    SidecarParseResult result;
    if (text.size() > maxSidecarBytes) {
        result.error = "larger than 16 MiB, not a capture sidecar";
        return result;
    }
    json object;
    try {
        object = json::parse(text.begin(), text.end());
    } catch (const json::exception& error) {
        result.error = "not valid JSON: " + plainJsonError(error.what());
        return result;
    }
    if (!object.is_object()) {
        result.error = "holds a JSON " + std::string(typeName(object)) + ", expected an object";
        return result;
    }
    if (!hasKeyOf(object, knownKeys)) {
        result.error = "holds none of the sidecar's keys (device_name, total_memory_bytes, nvidia_smi, …)";
        return result;
    }
    CaptureSidecar sidecar;
    sidecar.sourcePath = sourcePath;
    std::string error;
    const bool ok = readText(object, "device_name", sidecar.deviceName, error)
        && readCount(object, "total_memory_bytes", sidecar.totalMemoryBytes, error)
        && readText(object, "nvidia_smi", sidecar.nvidiaSmi, error)
        && readText(object, "torch_version", sidecar.torchVersion, error)
        && readText(object, "cuda_version", sidecar.cudaVersion, error)
        && readText(object, "alloc_conf", sidecar.allocConf, error) && readSmallInt(object, "rank", sidecar.rank, error)
        && readSmallInt(object, "world_size", sidecar.worldSize, error)
        && readText(object, "exception", sidecar.exception, error);
    if (!ok) {
        result.error = error;
        return result;
    }
    if (sidecar.totalMemoryBytes == 0u)
        sidecar.totalMemoryBytes.reset(); // a card of 0 bytes is a failed query, not a capacity
    result.sidecar = std::move(sidecar);
    return result;
}

bool looksLikeCaptureSidecar(std::string_view bytes)
{
    const std::string_view start = trimmedLeft(bytes);
    if (start.empty() || start.front() != '{' || bytes.size() > maxSidecarBytes)
        return false;
    // A cheap look before parsing: a snapshot's JSON conversion has none of these keys.
    const bool named = std::any_of(distinctiveKeys.begin(), distinctiveKeys.end(),
        [&](std::string_view key) { return bytes.find("\"" + std::string(key) + "\"") != std::string_view::npos; });
    if (!named)
        return false;
    const json object = json::parse(bytes.begin(), bytes.end(), nullptr, false);
    // An `oomlens summarize` file names the card too, but is a rank's summary, not its sidecar.
    return object.is_object() && hasKeyOf(object, distinctiveKeys) && !object.contains("segments")
        && !object.contains("device_traces") && !object.contains(std::string(rankSummaryKey));
}

std::vector<std::string> sidecarPathsFor(const std::string& snapshotPath)
{
    static constexpr std::array<std::string_view, 4> compressions = { ".gz", ".bz2", ".xz", ".zst" };
    static constexpr std::array<std::string_view, 7> snapshotExtensions
        = { ".pickle", ".pkl", ".pt", ".pth", ".json", ".html", ".bin" };
    std::vector<std::string> paths;
    if (snapshotPath.ends_with(sidecarSuffix))
        return paths;
    std::string_view stem = snapshotPath;
    std::string_view extension = lastExtension(stem);
    if (std::find(compressions.begin(), compressions.end(), extension) != compressions.end()) {
        stem.remove_suffix(extension.size());
        paths.push_back(std::string(stem) + std::string(sidecarSuffix));
        extension = lastExtension(stem);
    }
    if (std::find(snapshotExtensions.begin(), snapshotExtensions.end(), extension) != snapshotExtensions.end()) {
        stem.remove_suffix(extension.size());
        paths.push_back(std::string(stem) + std::string(sidecarSuffix));
    } else if (paths.empty()) {
        paths.push_back(snapshotPath + std::string(sidecarSuffix)); // "snapshot" without extension
    }
    return paths;
}

std::optional<std::string> embeddedSidecarText(const Snapshot& snapshot)
{
    if (!snapshot.strings)
        return std::nullopt;
    // Metadata strings are interned, so a million entries carry a handful of distinct ids.
    std::unordered_set<StringId> seen;
    std::optional<std::string> newest;
    for (const DeviceTrace& trace : snapshot.traces) {
        for (auto it = trace.events.rbegin(); it != trace.events.rend(); ++it) {
            if (!it->userMetadata.isValid() || !seen.insert(it->userMetadata).second)
                continue;
            const std::string_view text = snapshot.strings->get(it->userMetadata);
            if (looksLikeCaptureSidecar(text)) {
                newest = std::string(text);
                break; // the newest of this device; later devices may still override
            }
        }
    }
    return newest;
}

} // namespace oomlens
