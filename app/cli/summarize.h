#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens summarize INPUT... -o DIR [--shard I/N] [--jobs N] [--device N] [--rules FILE]`: one
// NAME.oomlens-summary.json per rank snapshot (core/job/ranksummaryfile.h), written where the
// snapshots lie so that only the summaries travel. `--shard I/N` takes every N-th file of the
// sorted list, so N processes of a job array or `srun -n N` split a folder with no coordination.
// Returns 0 when every file was summarized, 1 when one could not be read (its summary holds the
// error; the others are still written) or a summary could not be written, 2 for usage errors.
int runSummarize(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
