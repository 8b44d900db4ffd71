#pragma once

#include "core/textinputs.h"

#include <string>
#include <vector>

namespace oomlens {

// One number of an OOM message with what it means, for the "every number explained" tables of
// the app's overview and the HTML report.
struct ExplainedNumber
{
    enum class Kind : uint8_t {
        Printed, // a figure the message prints (request, capacity, free, allocated, ...)
        Process, // one process's usage from the message's process list
        Derived, // computed from the printed figures (used outside PyTorch's cache)
    };
    Kind kind = Kind::Printed;
    std::string label; // "Reserved but unallocated"
    std::string value; // "2.00 GiB", or "not reported"
    std::string meaning; // one line: "cached free blocks; large means fragmentation"
    std::string detail; // the longer explanation, for room like the report's table
};

// The message's numbers in reading order: the printed figures, then each process, then what
// follows from them. Derived figures come from OomFacts, so they agree with the diagnosis.
std::vector<ExplainedNumber> explainMessageNumbers(const OomMessage& message);

} // namespace oomlens
