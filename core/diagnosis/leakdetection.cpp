#include "core/diagnosis/leakdetection.h"

#include "core/analysis/userframe.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace oomlens {

namespace {

uint64_t liveBefore(const DeviceAnalysis& device, int64_t event)
{
    if (event <= 0 || device.allocatedAfter.empty())
        return device.initialAllocatedBytes;
    const auto index = static_cast<size_t>(std::min<int64_t>(event - 1, int64_t(device.allocatedAfter.size()) - 1));
    return device.allocatedAfter[index];
}

// The leaking site named by the frame the app and the report name it by (userframe.h).
std::string siteOf(const Snapshot& snapshot, StackId stack)
{
    const std::string label = userFrameLabel(snapshot, stack);
    return label.empty() ? std::string("(no stack recorded)") : label;
}

// What training itself keeps: weights, gradients, optimizer state, and the buffers the distributed
// machinery holds for its collectives (a deferred reduce-scatter's unsharded gradients grow over the
// micro-batches that skip the sync, and the framework frees them at the one that syncs).
bool isTrainingState(const Allocation& allocation)
{
    return allocation.category == Category::Parameters || allocation.category == Category::OptimizerState
        || allocation.category == Category::Gradients || allocation.category == Category::Communication;
}

// The bytes of the allocations whose interval [from, to) covers the point right before each of
// `events` (`interval` gives it, or nullopt to skip an allocation). One pass over the allocations:
// each adds its bytes to the run of points it covers, marked at the run's two ends and summed after.
template <typename Interval>
std::vector<uint64_t> bytesBefore(const DeviceAnalysis& device, const std::vector<int64_t>& events, Interval interval)
{
    std::vector<int64_t> sorted = events;
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint64_t> change(sorted.size() + 1, 0); // sums modulo 2^64: every subtraction meets its addition
    const auto firstAfter = [&](int64_t event) {
        return static_cast<size_t>(std::upper_bound(sorted.begin(), sorted.end(), event) - sorted.begin());
    };
    for (const Allocation& allocation : device.allocations) {
        const std::optional<std::pair<int64_t, int64_t>> span = interval(allocation);
        if (!span)
            continue;
        const size_t from = firstAfter(span->first);
        const size_t to = span->second >= 0 ? firstAfter(span->second) : sorted.size();
        if (from >= to)
            continue;
        change[from] += allocation.requestedSize;
        change[to] -= allocation.requestedSize;
    }
    std::vector<uint64_t> liveAt(sorted.size());
    uint64_t running = 0;
    for (size_t i = 0; i < sorted.size(); ++i) {
        running += change[i];
        liveAt[i] = running;
    }
    std::vector<uint64_t> bytes;
    bytes.reserve(events.size());
    for (const int64_t event : events)
        bytes.push_back(
            liveAt[static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), event) - sorted.begin())]);
    return bytes;
}

// Weights, gradients and optimizer state live right before each of `events`: what training keeps
// once it has created it.
std::vector<uint64_t> stateLiveBefore(const DeviceAnalysis& device, const std::vector<int64_t>& events)
{
    return bytesBefore(device, events, [](const Allocation& a) -> std::optional<std::pair<int64_t, int64_t>> {
        if (!isTrainingState(a))
            return std::nullopt;
        return std::pair { a.allocEvent, a.freeEvent };
    });
}

// Memory the program released that waits for another stream's work before the allocator takes it
// back (free_requested, free_completed later): still in the allocated count, no longer held by the
// program. A backlog of collectives makes it swing from step to step; it is pending_frees' to
// explain, not something the loop keeps.
std::vector<uint64_t> pendingBefore(const DeviceAnalysis& device, const std::vector<int64_t>& events)
{
    return bytesBefore(device, events, [](const Allocation& a) -> std::optional<std::pair<int64_t, int64_t>> {
        if (!a.freeWaited() || isTrainingState(a))
            return std::nullopt;
        return std::pair { a.freeRequestedEvent, a.freeEvent };
    });
}

// The points to compare: the starts of training steps after the first, else the starts of forward
// passes after the first.
void choosePoints(const DeviceAnalysis& device, const DeviceProfile& profile, int64_t untilEvent,
    int32_t firstTrainingStep, LeakFinding& finding)
{
    finding.point = "the start of each step";
    for (const StepProfile& step : profile.steps) {
        if (step.step > firstTrainingStep && !step.hasEval && step.firstEvent >= 0 && step.firstEvent <= untilEvent)
            finding.events.push_back(step.firstEvent);
    }
    if (finding.events.size() >= 3)
        return;
    finding.events.clear();
    finding.point = "the start of each forward pass";
    bool skippedFirst = false;
    for (size_t s = 0; s < device.phaseSpans.size(); ++s) {
        const PhaseSpan& span = device.phaseSpans[s];
        if (span.firstEvent > untilEvent)
            break;
        const bool starts = span.phase == Phase::Forward
            && (s == 0 || device.phaseSpans[s - 1].phase != Phase::Forward
                || device.phaseSpans[s - 1].step != span.step);
        if (!starts)
            continue;
        if (!skippedFirst) { // the first pass runs before gradients and optimizer state exist
            skippedFirst = true;
            continue;
        }
        finding.events.push_back(span.firstEvent);
    }
}

// Gradients and optimizer state appear in the first steps (lazily, at the first backward and
// optimizer.step(), or over several micro-batches of gradient accumulation); that is state
// creation, not a leak. What a leak keeps is compared without them: the live bytes of every
// other kind at each matching point.
void measureKeptAtPoints(const DeviceAnalysis& device, LeakFinding& finding)
{
    const std::vector<uint64_t> state = stateLiveBefore(device, finding.events);
    const std::vector<uint64_t> pending = pendingBefore(device, finding.events);
    for (size_t i = 0; i < finding.events.size(); ++i) {
        const uint64_t live = liveBefore(device, finding.events[i]);
        const uint64_t kept = state[i] + pending[i];
        finding.live.push_back(live > kept ? live - kept : 0);
    }
}

// Rising from point to point, most comparisons up, and still rising over the later half of the
// points: sets the slope and growth where it does.
bool growsLikeALeak(LeakFinding& finding)
{
    std::vector<int64_t> changes;
    for (size_t i = 1; i < finding.live.size(); ++i) {
        changes.push_back(static_cast<int64_t>(finding.live[i]) - static_cast<int64_t>(finding.live[i - 1]));
        finding.rising += changes.back() > 0 ? 1 : 0;
    }
    finding.comparisons = static_cast<int>(changes.size());
    std::sort(changes.begin(), changes.end());
    const int64_t median = changes[changes.size() / 2];
    if (finding.live.back() <= finding.live.front() || median <= 0 || 3 * finding.rising < 2 * finding.comparisons)
        return false;
    // A leak keeps the same bytes every step: growth confined to the first points (a cache warming
    // up, a buffer sized once) stops, and the later half of the points then shows little of it.
    const size_t middle = finding.live.size() / 2;
    const uint64_t lateGrowth
        = finding.live.back() > finding.live[middle] ? finding.live.back() - finding.live[middle] : 0;
    const uint64_t total = finding.live.back() - finding.live.front();
    const double laterShare = double(finding.live.size() - 1 - middle) / double(finding.live.size() - 1);
    if (double(lateGrowth) < 0.5 * laterShare * double(total))
        return false;
    finding.slopePerStep = static_cast<uint64_t>(median);
    finding.growth = finding.live.back() - finding.live.front();
    return true;
}

// What the steps left behind: made after the first point, still live at the last one. The
// weights, gradients and optimizer state are legitimately persistent.
std::vector<LeakFinding::Site> growingSites(
    const Snapshot& snapshot, const DeviceAnalysis& device, const std::vector<int64_t>& events)
{
    const int64_t first = events.front();
    const int64_t last = events.back();
    std::unordered_map<uint32_t, LeakFinding::Site> sites;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.allocEvent < first || allocation.allocEvent >= last || !allocation.liveAfter(last))
            continue;
        if (isTrainingState(allocation))
            continue;
        LeakFinding::Site& site = sites[allocation.stack.value];
        site.bytes += allocation.requestedSize;
        ++site.count;
    }
    std::unordered_map<std::string, LeakFinding::Site> byWhere;
    for (auto& [stack, site] : sites) {
        LeakFinding::Site& merged = byWhere[siteOf(snapshot, StackId(stack))];
        merged.bytes += site.bytes;
        merged.count += site.count;
    }
    std::vector<LeakFinding::Site> found;
    for (auto& [where, site] : byWhere) {
        site.where = where;
        found.push_back(site);
    }
    std::sort(found.begin(), found.end(),
        [](const auto& a, const auto& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.where < b.where; });
    return found;
}

} // namespace

std::optional<LeakFinding> findLeak(const Snapshot& snapshot, const DeviceAnalysis& device,
    const DeviceProfile& profile, int64_t untilEvent, int32_t firstTrainingStep)
{
    LeakFinding finding;
    choosePoints(device, profile, untilEvent, firstTrainingStep, finding);
    if (finding.events.size() < 3)
        return std::nullopt;
    measureKeptAtPoints(device, finding);
    if (!growsLikeALeak(finding))
        return std::nullopt;
    finding.growingSites = growingSites(snapshot, device, finding.events);
    return finding;
}

} // namespace oomlens
