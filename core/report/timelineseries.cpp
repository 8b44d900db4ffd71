#include "core/report/timelineseries.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace oomlens::report {

namespace {

struct Delta
{
    uint64_t size = 0;
    uint8_t category = 0;
    bool added = false;
};

bool aliveAfter(const Allocation& allocation, int64_t event)
{
    return allocation.allocEvent <= event && (allocation.freeEvent < 0 || allocation.freeEvent > event);
}

bool isSegmentGrowth(TraceAction action)
{
    return action == TraceAction::SegmentAlloc || action == TraceAction::SegmentMap;
}

bool isSegmentShrink(TraceAction action)
{
    return action == TraceAction::SegmentFree || action == TraceAction::SegmentUnmap;
}

} // namespace

uint64_t TimelinePoint::total() const
{
    return std::accumulate(live.begin(), live.end(), uint64_t(0));
}

CategoryBytes liveAt(const DeviceAnalysis& device, int64_t event)
{
    CategoryBytes bytes {};
    for (const Allocation& allocation : device.allocations) {
        if (aliveAfter(allocation, event))
            bytes[static_cast<size_t>(allocation.category)] += allocation.requestedSize;
    }
    return bytes;
}

std::vector<const Allocation*> largestLiveAt(const DeviceAnalysis& device, int64_t event, size_t limit)
{
    std::vector<const Allocation*> live;
    for (const Allocation& allocation : device.allocations) {
        if (aliveAfter(allocation, event))
            live.push_back(&allocation);
    }
    const auto larger = [](const Allocation* a, const Allocation* b) {
        if (a->requestedSize != b->requestedSize)
            return a->requestedSize > b->requestedSize;
        return a->allocEvent < b->allocEvent;
    };
    const size_t keep = std::min(limit, live.size());
    std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), larger);
    live.resize(keep);
    return live;
}

TimelineSeries buildTimelineSeries(const Snapshot& snapshot, const DeviceAnalysis& device, size_t buckets)
{
    TimelineSeries series;
    const DeviceTrace* trace = snapshot.trace(device.device);
    const size_t eventCount = trace ? trace->events.size() : 0;
    series.eventCount = static_cast<int64_t>(eventCount);

    uint64_t dumpReserved = 0;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device == device.device)
            dumpReserved += segment.totalSize;
    }

    // Counting sort of the alloc/free deltas by event: one pass instead of a sort, and memory
    // proportional to the allocations rather than events × categories.
    CategoryBytes initial {};
    std::vector<uint32_t> offsets(eventCount + 1, 0);
    const auto inTrace = [eventCount](int64_t event) { return event >= 0 && static_cast<size_t>(event) < eventCount; };
    for (const Allocation& allocation : device.allocations) {
        if (allocation.freeEvent >= 0 && allocation.freeEvent <= allocation.allocEvent)
            continue; // a free before its alloc: broken input, leave it out of the curve
        if (allocation.allocEvent < 0)
            initial[static_cast<size_t>(allocation.category)] += allocation.requestedSize;
        if (inTrace(allocation.allocEvent))
            ++offsets[static_cast<size_t>(allocation.allocEvent) + 1];
        if (inTrace(allocation.freeEvent))
            ++offsets[static_cast<size_t>(allocation.freeEvent) + 1];
    }
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    std::vector<Delta> deltas(eventCount ? offsets.back() : 0);
    {
        std::vector<uint32_t> cursor(offsets.begin(), offsets.end() - 1);
        for (const Allocation& allocation : device.allocations) {
            if (allocation.freeEvent >= 0 && allocation.freeEvent <= allocation.allocEvent)
                continue;
            const auto category = static_cast<uint8_t>(allocation.category);
            if (inTrace(allocation.allocEvent))
                deltas[cursor[static_cast<size_t>(allocation.allocEvent)]++]
                    = { allocation.requestedSize, category, true };
            if (inTrace(allocation.freeEvent))
                deltas[cursor[static_cast<size_t>(allocation.freeEvent)]++]
                    = { allocation.requestedSize, category, false };
        }
    }

    if (eventCount == 0) {
        TimelinePoint point;
        point.event = 0;
        point.live = initial;
        point.reserved = dumpReserved;
        series.maxAllocated = point.total();
        series.maxReserved = dumpReserved;
        series.points.push_back(point);
        return series;
    }

    const size_t bucketCount = std::max<size_t>(1, std::min(buckets, eventCount));
    const auto bucketOf = [&](size_t event) { return event * bucketCount / eventCount; };

    // Reserved memory is known at dump time; walking the segment events backwards recovers it
    // for every earlier moment, including the part of the run before the ring buffer began.
    std::vector<int64_t> bucketReserved(bucketCount, INT64_MIN);
    int64_t reserved = static_cast<int64_t>(dumpReserved);
    int64_t lowest = reserved;
    for (size_t i = eventCount; i-- > 0;) {
        int64_t& slot = bucketReserved[bucketOf(i)];
        slot = std::max(slot, reserved);
        const TraceEvent& event = trace->events[i];
        if (isSegmentGrowth(event.action))
            reserved -= static_cast<int64_t>(event.size);
        else if (isSegmentShrink(event.action))
            reserved += static_cast<int64_t>(event.size);
        lowest = std::min(lowest, reserved);
    }
    // Below zero means segments existed that the trace never saw allocated; lift the curve.
    int64_t lift = lowest < 0 ? -lowest : 0;
    // The analysis' own per-event series, when present, is the authority the GUI draws too.
    if (device.reservedAfter.size() == eventCount) {
        std::fill(bucketReserved.begin(), bucketReserved.end(), INT64_MIN);
        for (size_t i = 0; i < eventCount; ++i) {
            int64_t& slot = bucketReserved[bucketOf(i)];
            slot = std::max(slot, static_cast<int64_t>(device.reservedAfter[i]));
        }
        lift = 0;
    }
    for (int64_t value : bucketReserved)
        series.maxReserved = std::max(series.maxReserved, static_cast<uint64_t>(value + lift));

    series.firstTimeUs = trace->events.front().timeUs;
    series.lastTimeUs = trace->events.back().timeUs;

    CategoryBytes current = initial;
    uint64_t total = std::accumulate(initial.begin(), initial.end(), uint64_t(0));
    TimelinePoint low;
    TimelinePoint high;
    std::array<uint32_t, 7> phaseVotes {};
    std::vector<Phase> bucketPhase(bucketCount, Phase::Unknown);
    const bool havePhases = device.eventPhase.size() == eventCount;
    series.points.reserve(bucketCount * 2);
    size_t bucket = 0;
    bool bucketStarted = false;
    const auto closeBucket = [&]() {
        const uint64_t bucketReservedBytes = static_cast<uint64_t>(bucketReserved[bucket] + lift);
        low.reserved = bucketReservedBytes;
        high.reserved = bucketReservedBytes;
        if (low.event < high.event) {
            series.points.push_back(low);
            series.points.push_back(high);
        } else if (low.event > high.event) {
            series.points.push_back(high);
            series.points.push_back(low);
        } else {
            series.points.push_back(high);
        }
        const auto vote = std::max_element(phaseVotes.begin(), phaseVotes.end());
        bucketPhase[bucket] = static_cast<Phase>(vote - phaseVotes.begin());
        phaseVotes.fill(0);
    };
    for (size_t i = 0; i < eventCount; ++i) {
        const size_t b = bucketOf(i);
        if (b != bucket) {
            closeBucket();
            bucket = b;
            bucketStarted = false;
        }
        for (uint32_t d = offsets[i]; d < offsets[i + 1]; ++d) {
            const Delta& delta = deltas[d];
            if (delta.added) {
                current[delta.category] += delta.size;
                total += delta.size;
            } else {
                current[delta.category] -= std::min(delta.size, current[delta.category]);
                total -= std::min(delta.size, total);
            }
        }
        series.maxAllocated = std::max(series.maxAllocated, total);
        if (!bucketStarted || total < low.total()) {
            low.event = static_cast<int64_t>(i);
            low.live = current;
        }
        if (!bucketStarted || total > high.total()) {
            high.event = static_cast<int64_t>(i);
            high.live = current;
        }
        bucketStarted = true;
        if (havePhases)
            ++phaseVotes[static_cast<size_t>(device.eventPhase[i])];
    }
    closeBucket();

    if (havePhases) {
        for (size_t b = 0; b < bucketCount; ++b) {
            const auto first = static_cast<int64_t>((b * eventCount + bucketCount - 1) / bucketCount);
            const auto last = static_cast<int64_t>(((b + 1) * eventCount + bucketCount - 1) / bucketCount) - 1;
            if (!series.phases.empty() && series.phases.back().phase == bucketPhase[b])
                series.phases.back().lastEvent = last;
            else
                series.phases.push_back({ first, last, bucketPhase[b] });
        }
        std::erase_if(series.phases, [](const PhaseRun& run) { return run.phase == Phase::Unknown; });
    }
    return series;
}

} // namespace oomlens::report
