#pragma once

#include "core/snapshot.h"
#include "core/textinputs.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// The kinds of input, as named in the JSON contract (product.md §5).
enum class InputKind : uint8_t { Snapshot, OomMessage, MemorySummary, Traceback, NvidiaSmi, Log, Unknown };
std::string_view inputKindName(InputKind kind);

struct CaseInput
{
    std::string path; // "-" for stdin, "(pasted)" for the clipboard
    InputKind kind = InputKind::Unknown;
    std::optional<std::string> error; // one clear line when the input could not be read
    int snapshotIndex = -1; // into Case::snapshots when kind == Snapshot
};

// Everything the user opened together: any mix of snapshots and text.
struct Case
{
    std::vector<CaseInput> inputs;
    TextFindings text;
    std::vector<std::shared_ptr<const Snapshot>> snapshots;
};

} // namespace oomlens
