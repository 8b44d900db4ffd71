#pragma once

#include "core/capturesidecar.h"
#include "core/planner/modelspec.h"
#include "core/profilertimeline.h"
#include "core/snapshot.h"
#include "core/textinputs.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// The kinds of input, as named in the JSON contract (product.md §5).
// Sidecar: a capture helper's NAME.oomlens.json read beside a snapshot (never given on its own).
// ModelConfig: a Hugging Face config.json, which the planner (the What-if tab) plans for.
// ProfilerTimeline: torch.profiler's memory timeline (export_memory_timeline's raw or json form) or a
// Kineto chrome trace's [memory] events.
enum class InputKind : uint8_t {
    Snapshot,
    OomMessage,
    MemorySummary,
    Traceback,
    NvidiaSmi,
    Log,
    Unknown,
    Sidecar,
    ModelConfig,
    ProfilerTimeline
};
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
    // Capture sidecars read beside or inside the snapshots; their texts are already in `text`.
    std::vector<CaptureSidecar> sidecars;
    // Models described by a Hugging Face config.json among the inputs, in input order.
    std::vector<planner::ModelSpec> models;
    // torch.profiler memory timelines among the inputs, one per file and device, in input order.
    std::vector<ProfilerTimeline> profilerTimelines;
};

} // namespace oomlens
