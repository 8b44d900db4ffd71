#include "core/job/ranksummaryfile.h"

#include "core/diagnosis/diagnosisid.h"
#include "core/job/rankname.h"
#include "core/phase.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>
#include <stdexcept>

namespace oomlens {

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

// Far above any summary (a few KB); a bigger file is something else and is not parsed whole.
constexpr size_t maxSummaryBytes = size_t(16) << 20;
// The key is written first; a person's jq or editor may move it, but not far in a few-KB object.
constexpr size_t sniffWindow = 4096;

[[noreturn]] void invalid(const std::string& what)
{
    throw std::runtime_error("not a valid oomlens rank summary: " + what);
}

template <typename T> ordered orNull(const std::optional<T>& value)
{
    return value ? ordered(*value) : ordered(nullptr);
}

std::string_view rankSourceName(RankSource source)
{
    switch (source) {
    case RankSource::FileName:
        return "file_name";
    case RankSource::Metadata:
        return "metadata";
    case RankSource::Unknown:
        break;
    }
    return "unknown";
}

RankSource rankSourceFromName(std::string_view name)
{
    if (name == "file_name")
        return RankSource::FileName;
    if (name == "metadata")
        return RankSource::Metadata;
    return RankSource::Unknown;
}

// A field that is absent or null reads as "not known"; one of the wrong type is an error, so a
// damaged file is reported instead of merged as zeros.
const json* present(const json& object, const char* key)
{
    const auto found = object.find(key);
    return found == object.end() || found->is_null() ? nullptr : &*found;
}

std::optional<int64_t> integerField(const json& object, const char* key)
{
    const json* value = present(object, key);
    if (!value)
        return std::nullopt;
    if (!value->is_number_integer())
        invalid(std::string("\"") + key + "\" is not an integer");
    return value->get<int64_t>();
}

std::optional<uint64_t> bytesField(const json& object, const char* key)
{
    const json* value = present(object, key);
    if (!value)
        return std::nullopt;
    if (!value->is_number_unsigned())
        invalid(std::string("\"") + key + "\" is not a byte count");
    return value->get<uint64_t>();
}

std::optional<int> smallIntegerField(const json& object, const char* key)
{
    const std::optional<int64_t> value = integerField(object, key);
    if (!value)
        return std::nullopt;
    if (*value < std::numeric_limits<int>::min() || *value > std::numeric_limits<int>::max())
        invalid(std::string("\"") + key + "\" is out of range");
    return static_cast<int>(*value);
}

std::optional<std::string> stringField(const json& object, const char* key)
{
    const json* value = present(object, key);
    if (!value)
        return std::nullopt;
    if (!value->is_string())
        invalid(std::string("\"") + key + "\" is not a string");
    return value->get<std::string>();
}

bool boolField(const json& object, const char* key)
{
    const json* value = present(object, key);
    if (!value)
        return false;
    if (!value->is_boolean())
        invalid(std::string("\"") + key + "\" is not true or false");
    return value->get<bool>();
}

const json* objectField(const json& object, const char* key)
{
    const json* value = present(object, key);
    if (value && !value->is_object())
        invalid(std::string("\"") + key + "\" is not an object");
    return value;
}

ordered categoriesToJson(const CategoryBytes& bytes)
{
    ordered categories = ordered::object();
    for (int c = 0; c < categoryCount; ++c)
        categories[std::string(categoryName(static_cast<Category>(c)))] = bytes[static_cast<size_t>(c)];
    return categories;
}

ordered sitesToJson(const std::vector<std::pair<std::string, uint64_t>>& sites)
{
    ordered list = ordered::array();
    for (const auto& [site, bytes] : sites)
        list.push_back({ { "site", site }, { "bytes", bytes } });
    return list;
}

void readCategories(const json& object, const char* key, CategoryBytes& into)
{
    const json* categories = objectField(object, key);
    if (!categories)
        return;
    // A category a newer oomlens knows and this one does not counts as unknown, so the bands
    // still add up to the peak.
    for (const auto& [name, value] : categories->items()) {
        if (!value.is_number_unsigned())
            invalid("\"" + std::string(key) + "\"." + name + " is not a byte count");
        into[static_cast<size_t>(categoryFromName(name))] += value.get<uint64_t>();
    }
}

void readSites(const json& object, std::vector<std::pair<std::string, uint64_t>>& into)
{
    const json* sites = present(object, "top_sites_at_peak");
    if (!sites)
        return;
    if (!sites->is_array())
        invalid("\"top_sites_at_peak\" is not a list");
    for (const json& site : *sites) {
        if (!site.is_object())
            invalid("\"top_sites_at_peak\" holds something other than sites");
        into.emplace_back(stringField(site, "site").value_or(""), bytesField(site, "bytes").value_or(0));
    }
}

ordered rankToJson(const RankSummary& rank)
{
    ordered out;
    out["rank"] = rank.rank >= 0 ? ordered(rank.rank) : ordered(nullptr);
    out["rank_source"] = rankSourceName(rank.rankSource);
    out["rank_from_file_name"] = orNull(rank.rankFromName);
    out["rank_from_metadata"] = orNull(rank.rankFromMetadata);
    out["world_size"] = orNull(rank.worldSize);
    out["error"] = rank.readable() ? ordered(nullptr) : ordered(rank.error);
    out["device"] = rank.device;
    out["peak_allocated_bytes"] = rank.peakAllocatedBytes;
    out["peak_reserved_bytes"] = rank.peakReservedBytes;
    out["peak_time_us"] = rank.peakTimeUs;
    out["categories_at_peak"] = categoriesToJson(rank.categoriesAtPeak);
    out["top_sites_at_peak"] = sitesToJson(rank.topSitesAtPeak);
    out["oom"] = rank.oom;
    out["categories_at_oom"] = categoriesToJson(rank.categoriesAtOom);
    out["oom_time_us"] = orNull(rank.oomTimeUs);
    out["capacity_bytes"] = orNull(rank.capacityBytes);
    out["rest_of_card_bytes"] = orNull(rank.restOfCardBytes); // outside PyTorch: the job's outlier note
    out["device_name"] = orNull(rank.deviceName);
    out["top_diagnosis"] = rank.topDiagnosisId ? ordered(diagnosisIdName(*rank.topDiagnosisId)) : ordered(nullptr);
    out["top_diagnosis_title"] = rank.topDiagnosisId ? ordered(rank.topDiagnosisTitle) : ordered(nullptr);
    out["notes"] = rank.notes;
    return out;
}

void readRank(const json& object, RankSummary& rank)
{
    rank.rank = smallIntegerField(object, "rank").value_or(-1);
    rank.rankSource = rankSourceFromName(stringField(object, "rank_source").value_or("unknown"));
    rank.rankFromName = smallIntegerField(object, "rank_from_file_name");
    rank.rankFromMetadata = smallIntegerField(object, "rank_from_metadata");
    rank.worldSize = smallIntegerField(object, "world_size");
    rank.error = stringField(object, "error").value_or("");
    rank.device = smallIntegerField(object, "device").value_or(0);
    rank.peakAllocatedBytes = bytesField(object, "peak_allocated_bytes").value_or(0);
    rank.peakReservedBytes = bytesField(object, "peak_reserved_bytes").value_or(0);
    rank.peakTimeUs = integerField(object, "peak_time_us").value_or(0);
    readCategories(object, "categories_at_peak", rank.categoriesAtPeak);
    readSites(object, rank.topSitesAtPeak);
    rank.oom = boolField(object, "oom");
    readCategories(object, "categories_at_oom", rank.categoriesAtOom);
    rank.oomTimeUs = integerField(object, "oom_time_us");
    rank.capacityBytes = bytesField(object, "capacity_bytes");
    rank.restOfCardBytes = bytesField(object, "rest_of_card_bytes");
    rank.deviceName = stringField(object, "device_name");
    if (const std::optional<std::string> id = stringField(object, "top_diagnosis")) {
        rank.topDiagnosisId = diagnosisIdFromName(*id);
        rank.topDiagnosisTitle = stringField(object, "top_diagnosis_title").value_or(*id);
    }
    if (const json* notes = present(object, "notes")) {
        if (!notes->is_array())
            invalid("\"notes\" is not a list");
        for (const json& note : *notes) {
            if (!note.is_string())
                invalid("\"notes\" holds something other than text");
            rank.notes.push_back(note.get<std::string>());
        }
    }
}

} // namespace

std::string hashText(uint64_t hash)
{
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

std::optional<uint64_t> hashFromText(std::string_view text)
{
    if (text.size() != 16)
        return std::nullopt;
    uint64_t hash = 0;
    for (const char c : text) {
        int digit = -1;
        if (c >= '0' && c <= '9')
            digit = c - '0';
        else if (c >= 'a' && c <= 'f')
            digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            digit = c - 'A' + 10;
        if (digit < 0)
            return std::nullopt;
        hash = hash << 4 | static_cast<uint64_t>(digit);
    }
    return hash;
}

std::string summarizedRankToJson(const SummarizedRank& summary)
{
    ordered out;
    out[std::string(rankSummaryKey)] = rankSummaryFormat;
    out["oomlens_version"] = summary.oomlensVersion;
    ordered snapshot;
    snapshot["path"] = summary.snapshot.path;
    snapshot["size_bytes"] = summary.snapshot.sizeBytes;
    snapshot["hash"] = summary.snapshot.hash ? ordered(hashText(*summary.snapshot.hash)) : ordered(nullptr);
    snapshot["hash_algorithm"] = snapshotHashAlgorithm;
    out["snapshot"] = std::move(snapshot);
    out["analysis"] = { { "device", orNull(summary.device) },
        { "rules", summary.rules.empty() ? ordered(nullptr) : ordered(summary.rules) } };
    const ordered rank = rankToJson(summary.rank); // named: items() would outlive a temporary
    for (const auto& [key, value] : rank.items())
        out[key] = value;
    // A path or frame name that is not UTF-8 must not stop the file from being written.
    return out.dump(1, ' ', false, ordered::error_handler_t::replace) + '\n';
}

bool looksLikeRankSummary(std::string_view bytes)
{
    const size_t start = bytes.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos || bytes[start] != '{' || bytes.size() > maxSummaryBytes)
        return false;
    const std::string key = "\"" + std::string(rankSummaryKey) + "\"";
    return bytes.substr(start, sniffWindow).find(key) != std::string_view::npos;
}

SummarizedRank summarizedRankFromJson(std::string_view bytes)
{
    if (!looksLikeRankSummary(bytes))
        invalid("no \"" + std::string(rankSummaryKey) + "\" key");
    const json object = json::parse(bytes.begin(), bytes.end(), nullptr, false);
    if (object.is_discarded() || !object.is_object())
        invalid("the JSON is malformed");
    const std::optional<int64_t> format = integerField(object, std::string(rankSummaryKey).c_str());
    if (!format || *format < 1)
        invalid("\"" + std::string(rankSummaryKey) + "\" is not a format version");
    if (*format > rankSummaryFormat) {
        throw std::runtime_error("an oomlens rank summary of format " + std::to_string(*format)
            + ", newer than this oomlens reads (" + std::to_string(rankSummaryFormat)
            + "): summarize again with this version, or update it");
    }

    SummarizedRank summary;
    summary.oomlensVersion = stringField(object, "oomlens_version").value_or("");
    const json* snapshot = objectField(object, "snapshot");
    if (!snapshot)
        invalid("no \"snapshot\"");
    summary.snapshot.path = stringField(*snapshot, "path").value_or("");
    if (summary.snapshot.path.empty())
        invalid("no snapshot path");
    summary.snapshot.sizeBytes = bytesField(*snapshot, "size_bytes").value_or(0);
    // A hash of another algorithm cannot be compared: the summary then matches no snapshot.
    if (stringField(*snapshot, "hash_algorithm").value_or("") == snapshotHashAlgorithm) {
        if (const std::optional<std::string> hash = stringField(*snapshot, "hash")) {
            summary.snapshot.hash = hashFromText(*hash);
            if (!summary.snapshot.hash)
                invalid("the snapshot's \"hash\" is not 16 hex digits");
        }
    }
    if (const json* analysis = objectField(object, "analysis")) {
        if (const std::optional<int> device = smallIntegerField(*analysis, "device"))
            summary.device = *device;
        summary.rules = stringField(*analysis, "rules").value_or("");
    }
    readRank(object, summary.rank);
    summary.rank.file = summary.snapshot.path;
    return summary;
}

RankFileName rankFileName(std::string_view path)
{
    RankFileName name;
    name.rank = rankFromFileName(path);
    const size_t slash = path.find_last_of("/\\");
    name.name = std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
    return name;
}

bool describesSnapshot(const SummarizedRank& summary, std::string_view absolutePath, const SnapshotIdentity& content)
{
    return summary.snapshot.sameContent(content) && rankFileName(summary.rank.file) == rankFileName(absolutePath);
}

bool sameSnapshot(const SummarizedRank& a, const SummarizedRank& b)
{
    return a.snapshot.sameContent(b.snapshot) && a.rank.file == b.rank.file;
}

} // namespace oomlens
