#pragma once

#include "core/phase.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// torch.profiler's memory categories (torch/profiler/_memory_profiler.py, Category), in the order
// of the index export_memory_timeline_raw writes; None (no category found) is last.
enum class ProfilerCategory : uint8_t {
    Parameter,
    OptimizerState,
    Input,
    Temporary,
    Activation,
    Gradient,
    AutogradDetail,
    None
};
constexpr int profilerCategoryCount = 8;
using ProfilerCategoryBytes = std::array<int64_t, profilerCategoryCount>; // indexed by ProfilerCategory

// PyTorch's own name: "PARAMETER", "OPTIMIZER_STATE", ..., "AUTOGRAD_DETAIL", "None".
std::string_view profilerCategoryName(ProfilerCategory category);

// The mapping to oomlens's categories (README, "Profiler memory timelines"):
//   PARAMETER -> parameters, OPTIMIZER_STATE -> optimizer_state, INPUT -> inputs,
//   TEMPORARY -> temporaries, ACTIVATION -> activations, GRADIENT -> gradients,
//   AUTOGRAD_DETAIL -> temporaries, None -> unknown.
// AUTOGRAD_DETAIL is what autograd allocates for itself inside backward (the gradients of
// intermediate values, freed as backward moves on): short-lived like our temporaries, and not the
// parameter gradients that wait for the optimizer, which is what our "gradients" means.
Category oomlensCategory(ProfilerCategory category);

// What the file was: the profiler writes the same timeline three ways, and Kineto's trace has its
// own allocator events.
enum class ProfilerTimelineFormat : uint8_t {
    Raw, // export_memory_timeline_raw / export_memory_timeline("x.raw.json"): [time, action, bytes, category]
    Coalesced, // export_memory_timeline("x.json"): [times, sizes by category]
    ChromeTrace // prof.export_chrome_trace: "[memory]" instant events, totals only, no categories
};
std::string_view profilerTimelineFormatName(ProfilerTimelineFormat format); // "raw", "json", "chrome_trace"

// One device's memory over time as torch.profiler recorded it. Bytes by PyTorch's categories at
// each time the total changed (the chrome trace's totals go to None: it has no categories).
struct ProfilerTimeline
{
    struct Point
    {
        int64_t timeUs = 0;
        ProfilerCategoryBytes bytes {};
        int64_t total() const;
    };

    std::string path;
    ProfilerTimelineFormat format = ProfilerTimelineFormat::Raw;
    // "cuda:0" where the file says (the chrome trace's Device Type/Id); the raw and json exports
    // are per device but do not record which.
    std::optional<std::string> device;
    size_t events = 0; // memory events in the file
    std::vector<Point> points; // time order, one per distinct time
    // Allocations that existed before profiling began (time -1 in the raw export) are counted in
    // every point; their bytes, for the record.
    int64_t preexistingBytes = 0;
    std::vector<std::string> warnings;

    // The point with the most bytes live (the first of equals); nullptr when empty.
    const Point* peak() const;
    int64_t firstTimeUs() const;
    int64_t lastTimeUs() const;
};

// Bytes by oomlens category (negative sums, which a trace cut mid-way can give, clamp to 0).
std::array<uint64_t, categoryCount> toOomlensCategories(const ProfilerCategoryBytes& bytes);

} // namespace oomlens
