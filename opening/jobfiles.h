#pragma once

// Which inputs make a job: the one rule the CLI, the app and the MCP server share.

#include <string>
#include <vector>

namespace oomlens {

// A folder given as an input stands for what it holds, by name: every file (a job's snapshots and
// summaries, the launcher's log, a traceback, and whatever else is there, to be read or listed
// with the reason it was not) and every subfolder (listed as not read), but hidden entries and the
// capture sidecars read with their snapshot. An empty folder stays as it is, to be reported.
std::vector<std::string> expandFolders(const std::vector<std::string>& paths);

// The rank files of one job among `paths`: the snapshot files and rank summaries (`oomlens
// summarize`), judged by content (a map of the file, not a decode), when there are at least two
// or any summary. Each snapshot is one process, so two of them are two ranks, never one case;
// the other inputs (a launcher's log, a traceback) belong to the rank that failed. Empty when
// the inputs are one case. "-" (standard input) is text, never a rank.
std::vector<std::string> jobRankFiles(const std::vector<std::string>& paths);

// The snapshots and rank summaries directly inside `folder`, by name: a job's output directory on
// the desktop, holding what was copied from the cluster (the app's File ▸ Open Job Folder).
std::vector<std::string> jobFilesInFolder(const std::string& folder);

// The paths that are not among `rankFiles`: what a job's failing rank reads beside its snapshot.
std::vector<std::string> besideRanks(const std::vector<std::string>& paths, const std::vector<std::string>& rankFiles);

} // namespace oomlens
