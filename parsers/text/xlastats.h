#pragma once

#include "parsers/text/oommessage.h"

#include <vector>

namespace oomlens::text {

class TextLines;

// XLA's "BufferAssignment stats:" block right after a RESOURCE_EXHAUSTED message: the compiled
// program's parameters, temporaries and total. Returns the last line it read (`last` when absent).
size_t readXlaBufferStats(const TextLines& lines, size_t last, OomMessage& message);

// The BFC allocator's log ("ran out of memory trying to allocate", then "Limit:", "InUse:" and the
// pool size) describes the same failure as the TF/XLA exception printed after it: its numbers go
// into that message, and the log line itself is dropped. A BFC log with no exception after it
// stays a message of its own.
void foldBfcLogs(const TextLines& lines, std::vector<FoundOom>& found);

} // namespace oomlens::text
