#pragma once

#include "core/snapshot.h"

#include <string>

namespace oomlens::bench {

// Writes the snapshot's first device trace as a protocol-2 pickle the way PyTorch's _dump_snapshot
// lays it out (frame lists and key strings memoized), with one oom event at the end when asked:
// a rank file for the job benchmarks, without Python.
void writeRankFile(const std::string& path, const Snapshot& snapshot, bool withOom);

} // namespace oomlens::bench
