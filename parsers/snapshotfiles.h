#pragma once

#include <string>
#include <vector>

namespace oomlens {

// Whether a file is a memory snapshot, judged by its container (pickle opcodes, gzip, ZIP, JSON
// keys) without decoding it: how the CLI and the app tell the rank files of a job from text.
bool isSnapshotFile(const std::string& path);

// The snapshot files directly inside `folder`, by name: a job's output directory.
std::vector<std::string> snapshotFilesInFolder(const std::string& folder);

} // namespace oomlens
