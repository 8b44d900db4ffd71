#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <string>
#include <vector>

namespace oomlens {

// What each device of a snapshot held, one line per device, the described one marked: a snapshot
// of nn.DataParallel or of several models on several cards has more than the device the text
// describes in full. Empty for a single-device snapshot.
//   "device 0 (described): peak 78.10 GiB allocated, 79.00 GiB reserved, 1 out-of-memory event"
std::vector<std::string> devicesHeld(const SnapshotAnalysis& snapshot);

} // namespace oomlens
