#pragma once

#include "core/capturesidecar.h"
#include "core/snapshot.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

struct SidecarParseResult
{
    std::optional<CaptureSidecar> sidecar; // empty on error
    std::string error; // one line saying what is wrong with the file
};

// Reads the JSON object the capture helper writes (product.md §5). Unknown keys are ignored;
// a known key of the wrong type rejects the whole object, so nothing half-read is trusted.
SidecarParseResult parseCaptureSidecar(std::string_view json, const std::string& sourcePath);

// True when the bytes are a JSON object with a key only a sidecar has (device_name,
// total_memory_bytes, nvidia_smi, alloc_conf): a sidecar opened on its own is recognised by content
// like every other input, while a structured log line with an "exception" stays text.
bool looksLikeCaptureSidecar(std::string_view bytes);

// Where a sidecar for the snapshot at `snapshotPath` would be: NAME.oomlens.json for
// NAME.pickle, NAME.pickle.gz, NAME.pkl, …, nearest first (NAME.pickle.oomlens.json before
// NAME.oomlens.json for a compressed file).
std::vector<std::string> sidecarPathsFor(const std::string& snapshotPath);

// The newest trace entry's user_metadata that holds a sidecar object (set with
// torch.cuda.memory._set_memory_metadata); other user metadata is the user's own and ignored.
std::optional<std::string> embeddedSidecarText(const Snapshot& snapshot);

} // namespace oomlens
