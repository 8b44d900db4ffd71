#pragma once

// Two runs side by side: two snapshots (before and after a fix, two configurations), or two
// windows of one snapshot: steps (step k vs step k+l) or event ranges picked on the timeline. Allocations are matched
// by where they come from (the user's frames of the stack), what they are (category) and when (phase), never by
// address, which differs between runs. `oomlens compare`, the report's comparison section and
// the app's Compare view all read this one value.

#include "core/analysis/snapshotanalysis.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

using CategoryDelta = std::array<int64_t, categoryCount>; // signed bytes, indexed by Category

// Steps firstStep..lastStep of one run, both inclusive (DeviceAnalysis::eventStep numbering:
// step 0 is what runs before the first step starts).
struct StepWindow
{
    int32_t firstStep = 0;
    int32_t lastStep = 0;
    friend bool operator==(const StepWindow&, const StepWindow&) = default;
};

// Events firstEvent..lastEvent of one device trace, both inclusive: a range the user picked on
// the timeline.
struct EventWindow
{
    int64_t firstEvent = 0;
    int64_t lastEvent = -1;
    friend bool operator==(const EventWindow&, const EventWindow&) = default;
};

// "3:4" or "3" (the one step); nullopt when the text is neither or the range is reversed.
std::optional<StepWindow> parseStepWindow(std::string_view text);
// "step 3", "steps 3–4"
std::string stepWindowLabel(const StepWindow& window);

// A moment of one side (its peak, its OOM): where it is and what was live.
struct ComparedMoment
{
    int64_t event = -1; // in the side's device trace; -1: before the first event
    int64_t timeUs = 0;
    Phase phase = Phase::Unknown;
    int32_t step = -1; // -1 unknown
    uint64_t allocatedBytes = 0; // requested bytes live right after `event`
    CategoryBytes categories {}; // adds up to allocatedBytes
};

struct ComparisonSide
{
    std::string label; // "A", "B", "step 3": how the sentence, the text and the report name this side
    std::string source; // the snapshot's path as given (CompareOptions::sourceA/B); may be empty
    std::shared_ptr<const Snapshot> snapshot; // for showing a site's full stack (ComparedSite::stackA/B)
    int32_t device = 0;
    bool wholeTrace = true; // false: a window of the run (steps or events)
    std::optional<StepWindow> window; // set when the window is steps
    int64_t firstEvent = 0; // the events compared, [firstEvent, lastEvent]: the whole trace or the window
    int64_t lastEvent = -1;
    int64_t durationUs = 0; // time from firstEvent to lastEvent; 0 where the trace has no times
    int32_t stepCount = 0; // steps that start inside the compared events
    ComparedMoment peak; // the highest allocated moment of the compared events
    uint64_t peakReservedBytes = 0;
    std::optional<ComparedMoment> oom; // the first OOM inside the compared events
    uint64_t totalAllocatedBytes = 0; // requested bytes of every allocation made in the compared events
};

// What matches an allocation across runs. Frames are the user-facing frames of the stack
// (Python frames outside PyTorch, innermost first, as "file:line:function"); a stack without
// any is keyed by its userFrame() (core/analysis/userframe.h); an allocation without a
// recorded stack has no frames. Category and phase are those the analysis assigned.
struct SiteKey
{
    std::vector<std::string> frames;
    Category category = Category::Unknown;
    Phase phase = Phase::Unknown;
    friend bool operator==(const SiteKey&, const SiteKey&) = default;
    friend auto operator<=>(const SiteKey&, const SiteKey&) = default;
};

// A site in a few words for tables: its innermost frame without the directory ("model.py:44:
// attention"), "(no stack recorded)" for allocations without frames.
std::string siteLabel(const SiteKey& key);

struct SiteFigures
{
    uint64_t peakBytes = 0; // live at the side's peak
    uint32_t peakCount = 0;
    uint64_t allocatedBytes = 0; // allocated over the compared events (a side's total)
    uint32_t allocatedCount = 0;
    bool present() const { return peakCount > 0 || allocatedCount > 0; }
};

struct ComparedSite
{
    SiteKey key;
    SiteFigures a;
    SiteFigures b;
    // One stack of each side with this key (for its full frames); emptyStack() when absent.
    StackId stackA = FrameTable::emptyStack();
    StackId stackB = FrameTable::emptyStack();
    int64_t peakDelta() const { return static_cast<int64_t>(b.peakBytes) - static_cast<int64_t>(a.peakBytes); }
    int64_t allocatedDelta() const
    {
        return static_cast<int64_t>(b.allocatedBytes) - static_cast<int64_t>(a.allocatedBytes);
    }
    bool isNew() const { return !a.present() && b.present(); }
    bool vanished() const { return a.present() && !b.present(); }
};

// One column of the overlaid timelines: the lowest and highest allocated bytes of each side
// over [start, end) of the shared axis (both kept so the peak never averages away).
struct OverlayLevels
{
    bool present = false; // the side has events in this column (a side may have fewer steps)
    uint64_t low = 0;
    uint64_t high = 0;
};
struct OverlayColumn
{
    double start = 0;
    double end = 0;
    OverlayLevels a;
    OverlayLevels b;
};
struct ComparisonTimeline
{
    // Time-normalised: 0..1 is each side's first to last compared event (by time_us, or by event
    // index where the trace has no times). Step-aligned (both sides have steps): position s + f is
    // fraction f of the side's s-th compared step (0 = the first), so step starts line up.
    bool stepAligned = false;
    double axisEnd = 1.0; // 1 when time-normalised; the larger step count when step-aligned
    int32_t firstStepA = -1; // step-aligned: the step at position 0 of each side
    int32_t firstStepB = -1;
    std::vector<OverlayColumn> columns;
    uint64_t maxBytes = 0; // the highest level of either side
};

// What was allocated in the first window and is still alive at the end of the second, by site:
// the leak check of one run. `repeats`: the second window's allocations of the site outlive it
// too, so the site keeps growing from window to window (a one-off, such as optimizer state made
// in the first step, does not repeat).
struct SurvivingSite
{
    SiteKey key;
    uint64_t bytes = 0; // allocated in window 1, alive after the last event of window 2
    uint32_t count = 0;
    uint64_t secondWindowBytes = 0; // allocated in window 2, alive after its last event
    bool repeats = false;
    StackId stack = FrameTable::emptyStack();
};

struct Comparison
{
    ComparisonSide a;
    ComparisonSide b;
    bool windows = false; // a and b are two windows (steps or events) of one snapshot

    CategoryDelta categoriesDeltaAtPeak {}; // b − a
    // b − a at the OOM when either side has one (a side without an OOM counts at its peak).
    std::optional<CategoryDelta> categoriesDeltaAtOom;

    std::vector<ComparedSite> sites; // largest |b − a at the peak| first, then |b − a allocated|
    ComparisonTimeline timeline;
    std::vector<SurvivingSite> surviving; // windows only: repeating sites first, then largest
    uint64_t survivingBytes = 0;

    // One sentence in words: "B cut activations at the peak by 6.20 GiB; the peak moved from the
    // backward of step 1 to the optimizer step of step 1; peak 31.40 GiB → 25.00 GiB".
    std::string summary;

    std::vector<const ComparedSite*> newSites() const; // in B only
    std::vector<const ComparedSite*> vanishedSites() const; // in A only
};

struct CompareOptions
{
    std::string labelA = "A";
    std::string labelB = "B";
    std::string sourceA; // file paths, shown beside the labels
    std::string sourceB;
    size_t timelineColumns = 400;
};

// Two snapshots' primary devices (AnalysisOptions::device chose them).
Comparison compareSnapshots(const SnapshotAnalysis& a, const SnapshotAnalysis& b, const CompareOptions& options = {});

// Two step windows of one snapshot's primary device; labels default to the windows' own.
// Call windowProblem() first: a window must name steps the trace has.
Comparison compareWindows(
    const SnapshotAnalysis& run, const StepWindow& first, const StepWindow& second, const CompareOptions& options = {});

// Two event ranges of one snapshot's primary device (the app's two selections on one timeline),
// clamped to the trace; labels default to "events 1200–5400". Steps do not align them: the
// overlay is time-normalised.
Comparison compareEventWindows(const SnapshotAnalysis& run, const EventWindow& first, const EventWindow& second,
    const CompareOptions& options = {});

// Why `window` cannot be compared on `device` ("the trace has steps 0-5"); empty when it can.
std::string windowProblem(const DeviceAnalysis& device, const StepWindow& window);

} // namespace oomlens
