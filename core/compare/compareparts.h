#pragma once

// The pieces compareSnapshots() and compareWindows() assemble, one file each: the sites matched
// across the sides (comparesites.cpp), the overlaid timelines (comparetimeline.cpp) and the
// sentence (comparesummary.cpp). Internal to core/compare.

#include "core/compare/comparison.h"

namespace oomlens::compare {

// A side's device and the analysis it came from, for the pieces that read allocations.
struct SideSource
{
    const SnapshotAnalysis* analysis = nullptr;
    const DeviceAnalysis* device = nullptr;
};

// Every site of either side at its peak and over its compared events, matched by SiteKey,
// largest |peak delta| first.
std::vector<ComparedSite> matchSites(
    const ComparisonSide& a, const SideSource& sourceA, const ComparisonSide& b, const SideSource& sourceB);

// What the first window allocated that is still alive after the second window's last event.
std::vector<SurvivingSite> survivingSites(
    const ComparisonSide& first, const ComparisonSide& second, const SideSource& source);

ComparisonTimeline overlayTimelines(const ComparisonSide& a, const SideSource& sourceA, const ComparisonSide& b,
    const SideSource& sourceB, size_t columns);

std::string summarize(const Comparison& comparison);

} // namespace oomlens::compare
