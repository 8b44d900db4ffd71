#pragma once

// One rank summarized where its snapshot lies (`oomlens summarize`, on the cluster's nodes) and
// merged later where the person is (`diagnose`, `report`, the Job tab): the RankSummary the job
// needs, plus which snapshot it describes (path, size, content hash) so that a summary and its
// snapshot given together count once and the failing rank's snapshot can be found and checked.
// Text in, text out: core reads no files (parsers/ranksummaryfiles.h does).

#include "core/hash.h"
#include "core/job/jobsummary.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// The key a summary file opens with; summaries are recognised by it, never by their name.
inline constexpr std::string_view rankSummaryKey = "oomlens_rank_summary";
// The format's version, the value of rankSummaryKey. A reader takes its own version and older.
inline constexpr int rankSummaryFormat = 1;
// What `summarize` appends to a snapshot's name (rank3.pickle -> rank3.oomlens-summary.json).
inline constexpr std::string_view rankSummarySuffix = ".oomlens-summary.json";
// Names the hash below in the file, so that a future change of hash is told from a different file.
inline constexpr std::string_view snapshotHashAlgorithm = "oomlens-hash64-v1";

// A snapshot file's identity by content: core/hash.h's hash over every byte. Not cryptographic;
// it tells the same dump from another (two ranks' dumps differ in their addresses and times), and
// it runs at memory speed, where a SHA-256 would cost a second per GB on the node. tst_job pins
// its value: a change must come with a new snapshotHashAlgorithm.
inline uint64_t snapshotContentHash(std::string_view bytes)
{
    return hashBytes(bytes.data(), bytes.size());
}

struct SnapshotIdentity
{
    std::string path; // as given to `summarize`
    uint64_t sizeBytes = 0;
    std::optional<uint64_t> hash; // snapshotContentHash; nullopt when the file could not be read

    // Same file content: same size and hash (and both hashes known).
    bool sameContent(const SnapshotIdentity& other) const
    {
        return hash && other.hash && *hash == *other.hash && sizeBytes == other.sizeBytes;
    }
};

struct SummarizedRank
{
    RankSummary rank; // `group` is the job's to assign; a summary carries none
    SnapshotIdentity snapshot;
    std::string oomlensVersion; // of the `summarize` that wrote it
    std::optional<int32_t> device; // --device given to `summarize`
    std::string rules; // --rules given to `summarize`, as given
};

// Which rank a rank file is by its name: the rank rankFromFileName reads in its path (a rank
// folder counts), or the file's name itself when the path gives none (worker-b.pickle, whose rank
// only its capture metadata says). With the bytes it tells one snapshot from another: a job whose
// ranks replay the same batches has rank files with the same bytes (rank3.pickle, rank11.pickle),
// and those are two ranks however they are given, as snapshots or as summaries.
struct RankFileName
{
    std::optional<int> rank;
    std::string name; // the file name; what tells two files apart when `rank` is empty

    friend bool operator==(const RankFileName& a, const RankFileName& b)
    {
        return a.rank == b.rank && (a.rank || a.name == b.name);
    }
};
RankFileName rankFileName(std::string_view path);

// Whether `summary` describes the snapshot file at `absolutePath`, whose size and hash are
// `content`: the same bytes and the same rank by name. Only then are they one rank.
bool describesSnapshot(const SummarizedRank& summary, std::string_view absolutePath, const SnapshotIdentity& content);

// Whether two summaries describe one snapshot (`summarize` run twice over it): the same file, as
// it was summarized, with the same bytes.
bool sameSnapshot(const SummarizedRank& a, const SummarizedRank& b);

// The summary file's text (pretty JSON, ending in a newline), rankSummaryKey first.
std::string summarizedRankToJson(const SummarizedRank& summary);

// Whether the bytes are a summary file: a JSON object naming rankSummaryKey near its start.
// Cheap: no parse.
bool looksLikeRankSummary(std::string_view bytes);

// Reads a summary file's text. Throws std::runtime_error with one clear sentence when it is not
// a summary, is written by a newer format, or a field has the wrong type.
SummarizedRank summarizedRankFromJson(std::string_view bytes);

// "0123456789abcdef", and back (nullopt for anything but 16 hex digits).
std::string hashText(uint64_t hash);
std::optional<uint64_t> hashFromText(std::string_view text);

} // namespace oomlens
