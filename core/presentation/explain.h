#pragma once

#include "core/textinputs.h"

#include <string>
#include <vector>

namespace oomlens {

// Plain-words readings of parsed text inputs, one sentence per line: "PyTorch holds 5.75 GiB;
// 72.00 MiB of it is cached but unused". Shown by the GUI's message panel, the text CLI and the
// HTML report, so every number is printed with formatBytes like PyTorch's own messages.
std::vector<std::string> explainOomMessage(const OomMessage& message);
std::vector<std::string> explainSummary(const MemorySummary& summary);
std::vector<std::string> explainNvidiaSmi(const NvidiaSmiTable& table);

// Everything found in the text, messages first, then summaries, nvidia-smi tables and
// allocator settings.
std::vector<std::string> explainFindings(const TextFindings& findings);

} // namespace oomlens
