#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/textinputs.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Which OOM message belongs to a snapshot's oom event: same device and the same request, as
// far as two rounded figures can agree. Notes say what agrees and what does not.
struct MessageLink
{
    std::optional<size_t> messageIndex;
    std::vector<std::string> notes;
};

MessageLink linkMessage(const TextFindings& text, const DeviceAnalysis& device, int snapshotIndex);

// Summary counters against the snapshot: device, OOM count, peak allocated.
std::vector<std::string> compareSummary(const MemorySummary& summary, const DeviceAnalysis& device, int snapshotIndex);

} // namespace oomlens
