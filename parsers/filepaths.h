#pragma once

// Paths as the user gave them, joined, made absolute and listed the one way every front end
// words them: the paths printed, written into rank summaries and compared between runs stay the
// same whichever program (the app, the command line, the MCP server) produced them. Paths are
// UTF-8 (or whatever bytes the file system holds) and never reinterpreted.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// What follows the last '/': "rank0.pickle" of "/runs/rank0.pickle"; empty for "dir/".
std::string fileNameOf(const std::string& path);

// The folder part, "." when there is none: "/runs" of "/runs/rank0.pickle", "/" of "/x".
std::string folderOf(const std::string& path);

// `name` inside `folder`: "runs/x" of ("runs/", "x"); `name` itself when absolute; "./x" of
// (".", "x").
std::string pathInFolder(const std::string& folder, const std::string& name);

// `path` from the root, against the working folder, with "//", "." and ".." removed (a trailing
// '/' is kept): what tells two spellings of one file apart in a job.
std::string absoluteFilePath(const std::string& path);

// `path` with its symbolic links resolved; empty when it does not exist.
std::string canonicalFilePath(const std::string& path);

// What is at `path`, symbolic links followed.
bool isRegularFile(const std::string& path);
bool isFolder(const std::string& path);
// The size of what is at `path` (a folder's as the file system gives it); 0 when nothing is.
uint64_t fileSizeAt(const std::string& path);

// The entries directly inside `folder`, as paths (pathInFolder), sorted by name (bytewise): regular
// files, folders too when `withFolders`, and symbolic links to anything that exists (reading one
// then says what it is); never hidden entries ('.' first), dangling links, or devices, sockets and
// pipes lying in the folder itself. Empty when `folder` cannot be listed.
std::vector<std::string> folderEntries(const std::string& folder, bool withFolders);

} // namespace oomlens
