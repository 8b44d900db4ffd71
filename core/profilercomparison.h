#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"
#include "core/profilertimeline.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// A snapshot and a profiler timeline of the same run categorise the same memory twice: oomlens
// from each allocation's stack, torch.profiler from the autograd graph. Side by side, per oomlens
// category, each at its own peak.
struct ProfilerComparisonRow
{
    Category category = Category::Unknown;
    uint64_t snapshotBytes = 0; // live at the snapshot's peak
    uint64_t profilerBytes = 0; // live at the profiler timeline's peak, mapped to oomlens
    std::vector<ProfilerCategory> profilerSources; // PyTorch's categories that map here
};

struct ProfilerComparison
{
    size_t timelineIndex = 0; // into Case::profilerTimelines
    int snapshotIndex = 0; // into Case::snapshots
    int32_t snapshotDevice = 0;
    uint64_t snapshotPeakBytes = 0;
    uint64_t profilerPeakBytes = 0;
    std::vector<ProfilerComparisonRow> rows; // every category with bytes on either side, in enum order
};

// Each profiler timeline beside the first snapshot that has a timeline of its own (its primary
// device); nothing when either is missing.
std::vector<ProfilerComparison> compareProfilerWithSnapshots(const Case& input, const CaseAnalysis& analysis);

} // namespace oomlens
