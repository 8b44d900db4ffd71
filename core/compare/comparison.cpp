#include "core/compare/comparison.h"

#include "core/analysis/livequery.h"
#include "core/compare/compareparts.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace oomlens {

namespace {

using compare::SideSource;

int64_t eventCount(const DeviceAnalysis& device)
{
    return static_cast<int64_t>(device.allocatedAfter.size());
}

int64_t eventTime(const SideSource& source, int64_t event)
{
    const DeviceTrace* trace = source.analysis->snapshot->trace(source.device->device);
    if (!trace || event < 0 || event >= static_cast<int64_t>(trace->events.size()))
        return 0;
    return trace->events[static_cast<size_t>(event)].timeUs;
}

Phase phaseAt(const DeviceAnalysis& device, int64_t event)
{
    return event >= 0 && event < static_cast<int64_t>(device.eventPhase.size())
        ? device.eventPhase[static_cast<size_t>(event)]
        : Phase::Unknown;
}

int32_t stepAt(const DeviceAnalysis& device, int64_t event)
{
    return event >= 0 && event < static_cast<int64_t>(device.eventStep.size())
        ? device.eventStep[static_cast<size_t>(event)]
        : -1;
}

std::optional<ComparedMoment> firstOom(const DeviceAnalysis& device, int64_t first, int64_t last)
{
    for (const OomAnalysis& oom : device.ooms) {
        if (oom.eventIndex < first || oom.eventIndex > last)
            continue;
        return ComparedMoment { oom.eventIndex, oom.timeUs, oom.phase, oom.step, oom.allocatedBytes,
            oom.liveByCategory };
    }
    return std::nullopt;
}

// Steps that start inside [first, last]: the distinct step numbers after the first event's.
int32_t stepsStarting(const DeviceAnalysis& device, int64_t first, int64_t last)
{
    int32_t count = 0;
    for (int64_t e = std::max<int64_t>(first, 1); e <= last && e < static_cast<int64_t>(device.eventStep.size()); ++e) {
        if (device.eventStep[static_cast<size_t>(e)] != device.eventStep[static_cast<size_t>(e - 1)])
            ++count;
    }
    return count;
}

// The whole trace: the analysis already holds the peak, so it is read, not recomputed.
ComparisonSide wholeSide(const SnapshotAnalysis& analysis, const DeviceAnalysis& device, std::string label)
{
    const SideSource source { &analysis, &device };
    ComparisonSide side;
    side.label = std::move(label);
    side.snapshot = analysis.snapshot;
    side.device = device.device;
    side.firstEvent = 0;
    side.lastEvent = eventCount(device) - 1;
    side.durationUs = side.lastEvent > 0 ? eventTime(source, side.lastEvent) - eventTime(source, 0) : 0;
    side.stepCount = device.stepCount;
    side.peak = { device.peakEvent, device.peakTimeUs, phaseAt(device, device.peakEvent),
        stepAt(device, device.peakEvent), device.peakAllocatedBytes, device.categoriesAtPeak };
    side.peakReservedBytes = device.peakReservedBytes;
    side.oom = firstOom(device, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    for (const Allocation& allocation : device.allocations)
        side.totalAllocatedBytes += allocation.requestedSize;
    return side;
}

// The events of steps window.firstStep..lastStep (steps only grow along a trace).
std::pair<int64_t, int64_t> windowEvents(const DeviceAnalysis& device, const StepWindow& window)
{
    const auto& steps = device.eventStep;
    const auto first = std::find_if(steps.begin(), steps.end(), [&](int32_t s) { return s >= window.firstStep; });
    const auto last
        = std::find_if(steps.rbegin(), steps.rend(), [&](int32_t s) { return s >= 0 && s <= window.lastStep; });
    return { first - steps.begin(), static_cast<int64_t>(steps.rend() - last) - 1 };
}

// Events [first, last] of the run, the whole trace's rules restricted to them: the peak is the
// first highest moment inside, totals count what was allocated inside.
ComparisonSide windowSide(
    const SnapshotAnalysis& analysis, const DeviceAnalysis& device, int64_t first, int64_t last, std::string label)
{
    const SideSource source { &analysis, &device };
    ComparisonSide side;
    side.label = std::move(label);
    side.snapshot = analysis.snapshot;
    side.device = device.device;
    side.wholeTrace = false;
    side.firstEvent = std::max<int64_t>(first, 0);
    side.lastEvent = std::min(last, eventCount(device) - 1);
    if (side.firstEvent > side.lastEvent)
        return side; // windowProblem() says why; nothing to compare
    side.durationUs = eventTime(source, side.lastEvent) - eventTime(source, side.firstEvent);
    side.stepCount = stepsStarting(device, side.firstEvent - 1, side.lastEvent);
    int64_t peakEvent = side.firstEvent;
    for (int64_t e = side.firstEvent; e <= side.lastEvent; ++e) {
        const size_t i = static_cast<size_t>(e);
        if (device.allocatedAfter[i] > device.allocatedAfter[static_cast<size_t>(peakEvent)])
            peakEvent = e;
        side.peakReservedBytes = std::max(side.peakReservedBytes, device.reservedAfter[i]);
    }
    side.peak = { peakEvent, eventTime(source, peakEvent), phaseAt(device, peakEvent), stepAt(device, peakEvent),
        device.allocatedAfter[static_cast<size_t>(peakEvent)], liveByCategory(device, peakEvent) };
    side.oom = firstOom(device, side.firstEvent, side.lastEvent);
    for (const Allocation& allocation : device.allocations) {
        if (allocation.allocEvent >= side.firstEvent && allocation.allocEvent <= side.lastEvent)
            side.totalAllocatedBytes += allocation.requestedSize;
    }
    return side;
}

ComparisonSide stepWindowSide(
    const SnapshotAnalysis& analysis, const DeviceAnalysis& device, const StepWindow& window, std::string label)
{
    const auto [first, last] = windowEvents(device, window);
    ComparisonSide side = windowSide(analysis, device, first, last, label.empty() ? stepWindowLabel(window) : label);
    side.window = window;
    return side;
}

CategoryDelta categoryDelta(const CategoryBytes& a, const CategoryBytes& b)
{
    CategoryDelta delta {};
    for (size_t c = 0; c < delta.size(); ++c)
        delta[c] = static_cast<int64_t>(b[c]) - static_cast<int64_t>(a[c]);
    return delta;
}

void compareCategories(Comparison& comparison)
{
    comparison.categoriesDeltaAtPeak = categoryDelta(comparison.a.peak.categories, comparison.b.peak.categories);
    // A side that did not fail is compared at its peak: the most it held, the nearest it came.
    if (comparison.a.oom || comparison.b.oom) {
        const ComparedMoment& a = comparison.a.oom ? *comparison.a.oom : comparison.a.peak;
        const ComparedMoment& b = comparison.b.oom ? *comparison.b.oom : comparison.b.peak;
        comparison.categoriesDeltaAtOom = categoryDelta(a.categories, b.categories);
    }
}

// The default labels "A"/"B" say less than a window's own name ("step 3").
std::string givenLabel(const std::string& given, const std::string& fallback)
{
    return given == fallback ? std::string() : given;
}

// Two windows of one run, each side already cut out.
Comparison compareSides(const SnapshotAnalysis& run, ComparisonSide a, ComparisonSide b, const CompareOptions& options)
{
    static const DeviceAnalysis empty;
    const DeviceAnalysis* device = run.primary();
    const SideSource source { &run, device ? device : &empty };
    Comparison comparison;
    comparison.windows = true;
    comparison.a = std::move(a);
    comparison.b = std::move(b);
    comparison.a.source = options.sourceA;
    comparison.b.source = options.sourceA.empty() ? options.sourceB : options.sourceA;
    compareCategories(comparison);
    comparison.sites = compare::matchSites(comparison.a, source, comparison.b, source);
    comparison.timeline
        = compare::overlayTimelines(comparison.a, source, comparison.b, source, options.timelineColumns);
    comparison.surviving = compare::survivingSites(comparison.a, comparison.b, source);
    for (const SurvivingSite& site : comparison.surviving)
        comparison.survivingBytes += site.bytes;
    comparison.summary = compare::summarize(comparison);
    return comparison;
}

const DeviceAnalysis& primaryOf(const SnapshotAnalysis& analysis)
{
    static const DeviceAnalysis empty;
    const DeviceAnalysis* device = analysis.primary();
    return device ? *device : empty;
}

} // namespace

std::optional<StepWindow> parseStepWindow(std::string_view text)
{
    const auto number = [](std::string_view digits) -> std::optional<int32_t> {
        int32_t value = -1;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || value < 0)
            return std::nullopt;
        return value;
    };
    const size_t colon = text.find(':');
    const std::optional<int32_t> first = number(text.substr(0, colon));
    const std::optional<int32_t> last = colon == std::string_view::npos ? first : number(text.substr(colon + 1));
    if (!first || !last || *last < *first)
        return std::nullopt;
    return StepWindow { *first, *last };
}

std::string stepWindowLabel(const StepWindow& window)
{
    if (window.firstStep == window.lastStep)
        return "step " + std::to_string(window.firstStep);
    return "steps " + std::to_string(window.firstStep) + "\u2013" + std::to_string(window.lastStep);
}

std::string windowProblem(const DeviceAnalysis& device, const StepWindow& window)
{
    int32_t lowest = -1;
    int32_t highest = -1;
    for (const StepStart& start : device.stepStarts) {
        lowest = lowest < 0 ? start.step : std::min(lowest, start.step);
        highest = std::max(highest, start.step);
    }
    if (highest < 0)
        return "the trace of device " + std::to_string(device.device) + " has no steps to window";
    if (window.firstStep > highest || window.lastStep < lowest)
        return stepWindowLabel(window) + " is not in the trace, which has steps " + std::to_string(lowest) + "\u2013"
            + std::to_string(highest);
    return {};
}

std::vector<const ComparedSite*> Comparison::newSites() const
{
    std::vector<const ComparedSite*> found;
    for (const ComparedSite& site : sites) {
        if (site.isNew())
            found.push_back(&site);
    }
    return found;
}

std::vector<const ComparedSite*> Comparison::vanishedSites() const
{
    std::vector<const ComparedSite*> found;
    for (const ComparedSite& site : sites) {
        if (site.vanished())
            found.push_back(&site);
    }
    return found;
}

std::string siteLabel(const SiteKey& key)
{
    if (key.frames.empty())
        return "(no stack recorded)";
    // "file:line:function": the file ends at the first ':' followed by digits and ':' (a Windows
    // drive letter's colon is followed by '\\', a C++ name's "::" comes after the line).
    const std::string& frame = key.frames.front();
    size_t fileEnd = 0;
    for (size_t colon = frame.find(':'); colon != std::string::npos; colon = frame.find(':', colon + 1)) {
        size_t digits = colon + 1;
        while (digits < frame.size() && std::isdigit(static_cast<unsigned char>(frame[digits])))
            ++digits;
        if (digits > colon + 1 && digits < frame.size() && frame[digits] == ':') {
            fileEnd = colon;
            break;
        }
    }
    if (fileEnd == 0)
        return frame;
    const size_t slash = frame.find_last_of("/\\", fileEnd);
    return slash == std::string::npos || slash > fileEnd ? frame : frame.substr(slash + 1);
}

Comparison compareSnapshots(const SnapshotAnalysis& a, const SnapshotAnalysis& b, const CompareOptions& options)
{
    const DeviceAnalysis& deviceA = primaryOf(a);
    const DeviceAnalysis& deviceB = primaryOf(b);
    const SideSource sourceA { &a, &deviceA };
    const SideSource sourceB { &b, &deviceB };
    Comparison comparison;
    comparison.a = wholeSide(a, deviceA, options.labelA);
    comparison.b = wholeSide(b, deviceB, options.labelB);
    comparison.a.source = options.sourceA;
    comparison.b.source = options.sourceB;
    compareCategories(comparison);
    comparison.sites = compare::matchSites(comparison.a, sourceA, comparison.b, sourceB);
    comparison.timeline
        = compare::overlayTimelines(comparison.a, sourceA, comparison.b, sourceB, options.timelineColumns);
    comparison.summary = compare::summarize(comparison);
    return comparison;
}

Comparison compareWindows(
    const SnapshotAnalysis& run, const StepWindow& first, const StepWindow& second, const CompareOptions& options)
{
    const DeviceAnalysis& device = primaryOf(run);
    return compareSides(run, stepWindowSide(run, device, first, givenLabel(options.labelA, CompareOptions().labelA)),
        stepWindowSide(run, device, second, givenLabel(options.labelB, CompareOptions().labelB)), options);
}

Comparison compareEventWindows(
    const SnapshotAnalysis& run, const EventWindow& first, const EventWindow& second, const CompareOptions& options)
{
    const DeviceAnalysis& device = primaryOf(run);
    const auto label = [](const EventWindow& window) {
        return "events " + std::to_string(window.firstEvent) + "\u2013" + std::to_string(window.lastEvent);
    };
    const std::string labelA = givenLabel(options.labelA, CompareOptions().labelA);
    const std::string labelB = givenLabel(options.labelB, CompareOptions().labelB);
    return compareSides(run,
        windowSide(run, device, first.firstEvent, first.lastEvent, labelA.empty() ? label(first) : labelA),
        windowSide(run, device, second.firstEvent, second.lastEvent, labelB.empty() ? label(second) : labelB), options);
}

} // namespace oomlens
