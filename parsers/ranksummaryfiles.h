#pragma once

// The files of `oomlens summarize` on disk: recognising and reading a rank summary, and a
// snapshot file's identity (size and content hash) that ties a summary to its snapshot. What the
// summaries mean is core/job/ranksummaryfile.h's.

#include "core/job/ranksummaryfile.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Whether the file is a rank summary, by its first few KB (never by its name).
bool isRankSummaryFile(const std::string& path);

struct RankSummaryRead
{
    std::optional<SummarizedRank> summary;
    std::string error; // set when summary is empty: why the file is not a readable summary
};
RankSummaryRead readRankSummaryFile(const std::string& path);

// The file's size and snapshotContentHash of its bytes (read once, mapped). The hash is empty
// when the file cannot be read; the size is 0 when it does not exist.
SnapshotIdentity identifySnapshotFile(const std::string& path);

} // namespace oomlens
