#pragma once

// The file-system questions the command line asks of its paths, answered with std::filesystem
// and, where a path is shown to the user or written into a summary, spelled as it always was.

#include <string>

namespace oomlens::cli {

// `path` made absolute against the working directory and cleaned without asking the file system
// ("a/./b/../c" -> "/cwd/a/c", repeated slashes as one, no "." or ".." left but those above the
// root); symbolic links are not resolved. Spelled as QFileInfo::absoluteFilePath spelled it, since
// summaries and the MCP server's answers carry it: a trailing slash stays. Empty for an empty path.
std::string absoluteFilePath(const std::string& path);

// The last component of `path` ("logs/rank3.pickle" -> "rank3.pickle"; "" after a trailing slash).
std::string fileName(const std::string& path);

// `name` in `folder` ("out" + "a.json" -> "out/a.json"); an absolute `name` is itself.
std::string pathInFolder(const std::string& folder, const std::string& name);

// Whether `path` is a folder (a symbolic link to one included).
bool isDirectory(const std::string& path);

// Whether anything is at `path`, a dangling symbolic link included.
bool existsOrIsLink(const std::string& path);

// `path` and every missing folder above it, made; true when it is a folder now.
bool makeFolders(const std::string& path);

} // namespace oomlens::cli
