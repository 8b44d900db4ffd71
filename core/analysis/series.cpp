#include "core/analysis/series.h"

#include <algorithm>

namespace oomlens {

namespace {

// Applies event i to `bytes`: an alloc adds its allocation, a free_completed removes it.
inline void applyEvent(const DeviceAnalysis& d, int64_t i, CategoryBytes& bytes)
{
    const int32_t index = d.eventAllocation[static_cast<size_t>(i)];
    if (index < 0)
        return;
    const Allocation& a = d.allocations[static_cast<size_t>(index)];
    const auto c = static_cast<size_t>(a.category);
    if (a.allocEvent == i)
        bytes[c] += a.requestedSize;
    else if (a.freeEvent == i)
        bytes[c] -= std::min(bytes[c], a.requestedSize);
}

} // namespace

void buildCategoryCheckpoints(DeviceAnalysis& d)
{
    const auto n = static_cast<int64_t>(d.eventAllocation.size());
    CategoryBytes bytes {};
    for (const Allocation& a : d.allocations) {
        if (a.allocEvent < 0)
            bytes[static_cast<size_t>(a.category)] += a.requestedSize;
    }
    d.categoryCheckpoints.clear();
    d.categoryCheckpoints.reserve(static_cast<size_t>(n / DeviceAnalysis::checkpointInterval + 1));
    for (int64_t i = 0; i < n; ++i) {
        if (i % DeviceAnalysis::checkpointInterval == 0)
            d.categoryCheckpoints.push_back(bytes);
        applyEvent(d, i, bytes);
    }
    if (n == 0)
        d.categoryCheckpoints.push_back(bytes);
}

uint64_t allocatedAt(const DeviceAnalysis& d, int64_t event)
{
    if (event < 0 || d.allocatedAfter.empty())
        return d.initialAllocatedBytes;
    return d.allocatedAfter[static_cast<size_t>(
        std::min<int64_t>(event, static_cast<int64_t>(d.allocatedAfter.size()) - 1))];
}

uint64_t reservedAt(const DeviceAnalysis& d, int64_t event)
{
    if (event < 0 || d.reservedAfter.empty())
        return d.initialReservedBytes;
    return d
        .reservedAfter[static_cast<size_t>(std::min<int64_t>(event, static_cast<int64_t>(d.reservedAfter.size()) - 1))];
}

CategoryBytes categoryBytesAt(const DeviceAnalysis& d, int64_t event)
{
    const auto n = static_cast<int64_t>(d.eventAllocation.size());
    if (d.categoryCheckpoints.empty())
        return {};
    event = std::min(event, n - 1);
    // State after `event` = checkpoint before event+1 rounded down, replayed up to event.
    const int64_t next = event + 1;
    const int64_t k = std::min<int64_t>(
        next / DeviceAnalysis::checkpointInterval, static_cast<int64_t>(d.categoryCheckpoints.size()) - 1);
    CategoryBytes bytes = d.categoryCheckpoints[static_cast<size_t>(k)];
    for (int64_t i = k * DeviceAnalysis::checkpointInterval; i < next; ++i)
        applyEvent(d, i, bytes);
    return bytes;
}

std::vector<Bucket> downsample(const DeviceAnalysis& d, int64_t firstEvent, int64_t lastEvent, int buckets)
{
    const auto n = static_cast<int64_t>(d.allocatedAfter.size());
    firstEvent = std::clamp<int64_t>(firstEvent, 0, n);
    lastEvent = std::clamp<int64_t>(lastEvent, firstEvent, n);
    std::vector<Bucket> result;
    const int64_t span = lastEvent - firstEvent;
    if (span <= 0 || buckets <= 0)
        return result;
    const int64_t count = std::min<int64_t>(buckets, span);
    result.reserve(static_cast<size_t>(count));
    for (int64_t b = 0; b < count; ++b) {
        Bucket bucket;
        bucket.firstEvent = firstEvent + span * b / count;
        bucket.lastEvent = firstEvent + span * (b + 1) / count;
        const uint64_t* allocated = d.allocatedAfter.data();
        const uint64_t* reserved = d.reservedAfter.data();
        bucket.minAllocated = bucket.maxAllocated = allocated[bucket.firstEvent];
        bucket.maxEvent = bucket.firstEvent;
        bucket.minReserved = bucket.maxReserved = reserved[bucket.firstEvent];
        for (int64_t i = bucket.firstEvent + 1; i < bucket.lastEvent; ++i) {
            const uint64_t v = allocated[i];
            if (v > bucket.maxAllocated) {
                bucket.maxAllocated = v;
                bucket.maxEvent = i;
            }
            bucket.minAllocated = std::min(bucket.minAllocated, v);
            bucket.minReserved = std::min(bucket.minReserved, reserved[i]);
            bucket.maxReserved = std::max(bucket.maxReserved, reserved[i]);
        }
        bucket.categoriesAtMax = categoryBytesAt(d, bucket.maxEvent);
        result.push_back(bucket);
    }
    return result;
}

void buildTimeCheckpoints(const DeviceTrace* trace, DeviceAnalysis& d)
{
    d.timeCheckpoints.clear();
    if (!trace)
        return;
    const size_t n = trace->events.size();
    d.timeCheckpoints.reserve(n / DeviceAnalysis::checkpointInterval + 1);
    int64_t runningMax = INT64_MIN;
    for (size_t i = 0; i < n; ++i) {
        if (i % DeviceAnalysis::checkpointInterval == 0)
            d.timeCheckpoints.push_back(runningMax);
        runningMax = std::max(runningMax, trace->events[i].timeUs);
    }
}

int64_t eventAtTime(const DeviceAnalysis& d, const DeviceTrace& trace, int64_t timeUs)
{
    const auto n = static_cast<int64_t>(trace.events.size());
    if (n == 0 || d.timeCheckpoints.empty())
        return n;
    // The last checkpoint whose running maximum is still below timeUs: the answer lies in its
    // interval or later, and the running maximum is non-decreasing.
    auto it = std::partition_point(
        d.timeCheckpoints.begin(), d.timeCheckpoints.end(), [&](int64_t runningMax) { return runningMax < timeUs; });
    const auto k = static_cast<int64_t>(it - d.timeCheckpoints.begin()) - 1;
    if (k < 0)
        return 0;
    int64_t runningMax = d.timeCheckpoints[static_cast<size_t>(k)];
    for (int64_t i = k * DeviceAnalysis::checkpointInterval; i < n; ++i) {
        runningMax = std::max(runningMax, trace.events[static_cast<size_t>(i)].timeUs);
        if (runningMax >= timeUs)
            return i;
    }
    return n;
}

} // namespace oomlens
