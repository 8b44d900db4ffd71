#pragma once

#include "core/analysis/generatedcodeframes.h"
#include "core/analysis/snapshotanalysis.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// What torch.compile tells about one allocation: the region it ran in (the trace entry's
// compile_context, recorded with `_record_memory_history(compile_context=True)`, e.g.
// "Torch-Compiled Region: 0/0") and the generated code frame it came from. The model line is
// the user frame (core/analysis/userframe.h), found past the generated code.
struct CompileAttribution
{
    std::string_view context; // empty outside compiled regions or when not recorded
    std::optional<FrameId> generatedFrame; // innermost frame of Inductor's output code
    bool compiled() const { return !context.empty() || generatedFrame.has_value(); }
};

// Over many allocations of one snapshot, pass its GeneratedCodeFrames, built once: the one-argument
// form decides the frames of this allocation's stack from their file names each time.
CompileAttribution compileAttribution(const Snapshot& snapshot, const DeviceAnalysis& device,
    const Allocation& allocation, const GeneratedCodeFrames& generated);
CompileAttribution compileAttribution(
    const Snapshot& snapshot, const DeviceAnalysis& device, const Allocation& allocation);

// One compiled region's allocations in the trace, by context, most bytes first.
struct CompiledRegion
{
    std::string context; // "" for allocations of generated code without a recorded context
    size_t allocations = 0;
    uint64_t requestedBytes = 0; // summed over its allocations
    uint64_t largestBytes = 0;
    std::vector<std::pair<std::string, uint64_t>> topSites; // "file:line function", bytes
};

std::vector<CompiledRegion> compiledRegions(
    const Snapshot& snapshot, const DeviceAnalysis& device, size_t maxSites = 5);

} // namespace oomlens
