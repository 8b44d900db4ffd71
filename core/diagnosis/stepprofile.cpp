#include "core/diagnosis/stepprofile.h"

#include <algorithm>
#include <map>

namespace oomlens {

namespace {

uint64_t totalOf(const CategoryBytes& bands)
{
    uint64_t sum = 0;
    for (const uint64_t bytes : bands)
        sum += bytes;
    return sum;
}

} // namespace

bool isDynamic(Category category)
{
    return category == Category::Activations || category == Category::Temporaries || category == Category::Inputs
        || category == Category::Unknown;
}

uint64_t dynamicBandBytes(const CategoryBytes& bands)
{
    uint64_t sum = 0;
    for (int i = 0; i < categoryCount; ++i) {
        if (isDynamic(static_cast<Category>(i)))
            sum += bands[static_cast<size_t>(i)];
    }
    return sum;
}

uint64_t StepProfile::startDynamic() const
{
    return dynamicBandBytes(startBands);
}

uint64_t StepProfile::startLive() const
{
    return totalOf(startBands);
}

const StepProfile* DeviceProfile::step(int32_t number) const
{
    for (const auto& profile : steps) {
        if (profile.step == number)
            return &profile;
    }
    return nullptr;
}

namespace {

// Live before the trace's first event: the allocations older than it.
CategoryBytes liveBeforeTrace(const DeviceAnalysis& device)
{
    CategoryBytes live {};
    for (const auto& allocation : device.allocations) {
        if (allocation.allocEvent < 0)
            live[static_cast<size_t>(allocation.category)] += allocation.requestedSize;
    }
    return live;
}

// One pass over the events: what is live by band, and the profile of the step the current event
// belongs to. The live total and its dynamic part are kept as running sums, and the step's profile
// is looked up only when the step changes: this runs once per event of the trace.
struct LiveWalk
{
    CategoryBytes live {};
    uint64_t liveTotal = 0;
    uint64_t liveDynamic = 0;
    std::map<int32_t, StepProfile> steps;
    StepProfile* profile = nullptr;
    int32_t profileStep = -1;

    explicit LiveWalk(const CategoryBytes& before)
        : live(before)
        , liveTotal(totalOf(before))
        , liveDynamic(dynamicBandBytes(before))
    { }

    void enterEvent(int64_t e, int32_t step, Phase phase)
    {
        if (step < 0) {
            profile = nullptr;
        } else if (!profile || step != profileStep) {
            auto [it, inserted] = steps.try_emplace(step);
            profile = &it->second;
            if (inserted) {
                profile->step = step;
                profile->firstEvent = e;
                profile->startBands = live;
            }
        }
        profileStep = step;
        if (profile) {
            profile->lastEvent = e;
            profile->hasBackward |= phase == Phase::Backward;
            profile->hasOptimizer |= phase == Phase::Optimizer;
            profile->hasEval |= phase == Phase::Eval;
        }
    }

    void allocate(const Allocation& allocation, int64_t e, int32_t step, DeviceProfile& result)
    {
        auto& band = live[static_cast<size_t>(allocation.category)];
        const bool dynamic = isDynamic(allocation.category);
        band += allocation.requestedSize;
        liveTotal += allocation.requestedSize;
        if (dynamic)
            liveDynamic += allocation.requestedSize;
        auto& peak = result.peakBands[static_cast<size_t>(allocation.category)];
        peak = std::max(peak, band);
        if (allocation.category == Category::OptimizerState && result.firstOptimizerStateEvent < 0) {
            result.firstOptimizerStateEvent = e;
            result.firstOptimizerStateStep = step;
        }
        if (profile && dynamic && allocation.requestedSize > profile->largestDynamicAlloc) {
            profile->largestDynamicAlloc = allocation.requestedSize;
            profile->largestDynamicEvent = e;
        }
    }

    void free(const Allocation& allocation)
    {
        auto& band = live[static_cast<size_t>(allocation.category)];
        const uint64_t freed = std::min(band, allocation.requestedSize);
        band -= freed;
        liveTotal -= freed;
        if (isDynamic(allocation.category))
            liveDynamic -= freed;
    }

    void notePeak(int64_t e)
    {
        if (!profile)
            return;
        if (liveTotal > profile->peakLive) {
            profile->peakLive = liveTotal;
            profile->peakEvent = e;
        }
        profile->peakDynamic = std::max(profile->peakDynamic, liveDynamic);
    }
};

// Outputs kept before the ring buffer's window count as much as those it still shows: an
// allocation older than the trace has its phase from its own frames.
void countEvalRetained(const DeviceAnalysis& device, int64_t last, DeviceProfile& result)
{
    for (const auto& allocation : device.allocations) {
        if (allocation.phase != Phase::Eval || allocation.allocEvent > last)
            continue;
        // Weights and a generate()'s KV cache are not outputs evaluation kept, nor is a collective's
        // buffer (ZeRO-3 gathers each layer's parameters under its own no_grad hooks: one per layer,
        // not one per batch); nor is a block the program already freed whose reuse waits on another
        // stream's work (free_requested, no free_completed yet: record_stream, a collective's
        // buffer): the allocator holds it, not the program.
        const bool releasedByProgram = allocation.releasedBy(last);
        if (allocation.category == Category::Parameters || allocation.category == Category::KvCache
            || allocation.category == Category::Communication || !allocation.liveAfter(last) || releasedByProgram)
            continue;
        result.evalRetainedBytes += allocation.requestedSize;
        ++result.evalRetainedCount;
        if (!allocation.olderThanTrace()
            && (result.firstEvalRetainedEvent < 0 || allocation.allocEvent < result.firstEvalRetainedEvent))
            result.firstEvalRetainedEvent = allocation.allocEvent;
    }
}

} // namespace

DeviceProfile profileDevice(const DeviceAnalysis& device, int64_t untilEvent)
{
    DeviceProfile result;
    const int64_t eventCount = static_cast<int64_t>(device.eventAllocation.size());
    const int64_t last = untilEvent < 0 || untilEvent >= eventCount ? eventCount - 1 : untilEvent;

    LiveWalk walk(liveBeforeTrace(device));
    result.peakBands = walk.live;
    for (int64_t e = 0; e <= last; ++e) {
        const int32_t step
            = e < static_cast<int64_t>(device.eventStep.size()) ? device.eventStep[static_cast<size_t>(e)] : -1;
        const Phase phase = e < static_cast<int64_t>(device.eventPhase.size())
            ? device.eventPhase[static_cast<size_t>(e)]
            : Phase::Unknown;
        walk.enterEvent(e, step, phase);
        const int32_t index = device.eventAllocation[static_cast<size_t>(e)];
        if (index >= 0) {
            const Allocation& allocation = device.allocations[static_cast<size_t>(index)];
            if (allocation.allocEvent == e)
                walk.allocate(allocation, e, step, result);
            else if (allocation.freeEvent == e)
                walk.free(allocation);
        }
        walk.notePeak(e);
    }
    result.bandsAtEnd = walk.live;
    for (auto& [number, profile] : walk.steps) {
        profile.complete = profile.lastEvent < last;
        result.steps.push_back(profile);
    }
    countEvalRetained(device, last, result);
    return result;
}

} // namespace oomlens
