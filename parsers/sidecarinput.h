#pragma once

#include "core/case.h"

#include <string>
#include <string_view>

namespace oomlens {

// Adds a capture sidecar to the case: a CaseInput of kind Sidecar, a Case::sidecars entry, and
// its texts in Case::text as if each had been given on its own (nvidia_smi and exception through
// the text parser, alloc_conf as an allocator setting). A bad sidecar becomes that input's error
// and adds nothing else. `snapshotIndex` is -1 for a sidecar opened by itself.
void addSidecar(Case& target, const std::string& path, std::string_view bytes, int snapshotIndex);

// Reads NAME.oomlens.json beside the snapshot file at `snapshotPath`, when there is one.
void addSidecarBeside(Case& target, const std::string& snapshotPath, int snapshotIndex);

// Reads a sidecar object embedded in the snapshot's trace user_metadata, when there is one.
void addEmbeddedSidecar(Case& target, const std::string& snapshotPath, int snapshotIndex);

} // namespace oomlens
