#include "parsers/ranksummaryfiles.h"

#include "parsers/filepaths.h"
#include "parsers/inputfile.h"
#include "parsers/snapshotfiles.h"
#include "parsers/text/textlines.h"

#include <stdexcept>

namespace oomlens {

namespace {

// A summary names its key within its first 4 KB (core/job/ranksummaryfile.cpp).
constexpr size_t sniffBytes = 4096;

} // namespace

bool isRankSummaryFile(const std::string& path)
{
    if (!isRegularFile(path))
        return false;
    const InputFileBytes file = peekRegularFile(path, sniffBytes);
    return file.error.empty() && looksLikeRankSummary(file.bytes.substr(0, sniffBytes));
}

RankSummaryRead readRankSummaryFile(const std::string& path)
{
    RankSummaryRead result;
    std::string error;
    const std::optional<std::string> bytes = readSmallFile(path, maxStreamBytes, &error);
    if (!bytes) {
        result.error = "cannot read the summary (" + error + ")";
        return result;
    }
    try {
        result.summary = summarizedRankFromJson(*bytes);
        result.summary->rank.summaryFile = path;
    } catch (const std::exception& e) {
        result.error = text::sanitizedUtf8(e.what()); // a parse error quotes the file's bytes
    }
    return result;
}

SnapshotIdentity identifySnapshotFile(const std::string& path)
{
    SnapshotIdentity identity;
    identity.path = path;
    const InputFileBytes file = readInputFile(path); // mapped: hashed straight from the page cache
    if (!file.error.empty())
        return identity;
    identity.sizeBytes = static_cast<uint64_t>(file.bytes.size());
    identity.hash = snapshotContentHash(file.bytes);
    return identity;
}

} // namespace oomlens
