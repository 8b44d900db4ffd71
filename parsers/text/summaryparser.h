#pragma once

#include "core/textinputs.h"

#include <vector>

namespace oomlens::text {

class TextLines;

// Every torch.cuda.memory_summary() table in the text, whole or in pieces: cells are split on `|`
// (columns shift once numbers overflow), units are KB/MB (<=1.13) or KiB/MiB (2.0+), and pasted
// tables may have collapsed whitespace, a "Memory summary: " prefix or a missing head or tail.
std::vector<MemorySummary> findMemorySummaries(const TextLines& lines);

} // namespace oomlens::text
