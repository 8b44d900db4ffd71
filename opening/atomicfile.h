#pragma once

#include <string>
#include <string_view>

namespace oomlens {

// Writes `bytes` to `path` whole or not at all: into a new file beside it, flushed to the disk,
// then renamed over it, so that a failed write or a process killed mid-write leaves the old file
// (or none), never half of a new one. A symbolic link at `path` keeps pointing where it did, and
// the file there is replaced; an existing file's permissions carry over. On failure `error`
// says why ("Permission denied", "Filename refers to a directory").
bool writeFileAtomically(const std::string& path, std::string_view bytes, std::string& error);

} // namespace oomlens
