#include "core/analysis/poolseries.h"

#include "core/analysis/segmentmap.h"

#include <algorithm>
#include <map>

namespace oomlens {

namespace {

constexpr uint64_t smallSegmentSize = uint64_t(2) << 20;

// Replays the trace forwards from the state before its first event, one pool account per
// (stream, pool kind).
class PoolSweep
{
public:
    PoolSweep(const Snapshot& snapshot, const DeviceAnalysis& device, bool trackBlocks)
        : m_device(device)
        , m_trackBlocks(trackBlocks)
        , m_segments(segmentsAfter(snapshot, device.device, -1))
        , m_poolOfAllocation(device.allocations.size(), -1)
    {
        for (const auto& [address, s] : m_segments)
            m_reserved[static_cast<size_t>(pool({ s.stream, s.isLargePool }))] += s.size;
        for (size_t i = 0; i < device.allocations.size(); ++i) {
            if (device.allocations[i].olderThanTrace())
                open(i);
        }
    }

    // Applies event i; returns the pool it changed, -1 for none.
    int apply(int64_t i, const TraceEvent& e)
    {
        switch (e.action) {
        case TraceAction::Alloc:
        case TraceAction::FreeCompleted:
        case TraceAction::Free: {
            const int32_t index = m_device.eventAllocation[static_cast<size_t>(i)];
            if (index < 0)
                return -1;
            const Allocation& a = m_device.allocations[static_cast<size_t>(index)];
            if (a.allocEvent == i)
                return open(static_cast<size_t>(index));
            if (a.freeEvent == i)
                return close(static_cast<size_t>(index));
            return -1;
        }
        case TraceAction::SegmentAlloc:
        case TraceAction::SegmentMap: {
            // The segment map decides the pool kind (a mapped range joins its neighbour's).
            applySegmentEvent(m_segments, e, false);
            auto it = segmentAt(m_segments, e.addr);
            const int p = it != m_segments.end() ? pool({ it->second.stream, it->second.isLargePool })
                                                 : pool({ e.stream, e.size != smallSegmentSize });
            m_reserved[static_cast<size_t>(p)] += e.size;
            return p;
        }
        case TraceAction::SegmentFree:
        case TraceAction::SegmentUnmap: {
            auto it = segmentAt(m_segments, e.addr);
            const int p = it != m_segments.end() ? pool({ it->second.stream, it->second.isLargePool })
                                                 : pool({ e.stream, e.size != smallSegmentSize });
            uint64_t& reserved = m_reserved[static_cast<size_t>(p)];
            reserved -= std::min(reserved, e.size);
            applySegmentEvent(m_segments, e, false);
            return p;
        }
        default:
            return -1;
        }
    }

    size_t poolCount() const { return m_keys.size(); }
    const PoolKey& key(size_t p) const { return m_keys[p]; }
    uint64_t reserved(size_t p) const { return m_reserved[p]; }
    uint64_t active(size_t p) const { return m_active[p]; }

    // Largest gap between live blocks per pool, from the current segments.
    std::vector<uint64_t> largestFreeBlocks() const
    {
        std::vector<uint64_t> largest(m_keys.size(), 0);
        for (const auto& [address, s] : m_segments) {
            const auto p = static_cast<size_t>(m_index.at({ s.stream, s.isLargePool }));
            const uint64_t end = s.address + s.size;
            uint64_t cursor = s.address;
            for (auto it = m_blocks.lower_bound(s.address); it != m_blocks.end() && it->first < end; ++it) {
                if (it->first > cursor)
                    largest[p] = std::max(largest[p], it->first - cursor);
                cursor = std::max(cursor, std::min(end, it->first + it->second));
            }
            if (end > cursor)
                largest[p] = std::max(largest[p], end - cursor);
        }
        return largest;
    }

private:
    int pool(const PoolKey& key)
    {
        auto [it, inserted] = m_index.try_emplace(key, static_cast<int>(m_keys.size()));
        if (inserted) {
            m_keys.push_back(key);
            m_reserved.push_back(0);
            m_active.push_back(0);
        }
        return it->second;
    }

    int open(size_t index)
    {
        const Allocation& a = m_device.allocations[index];
        auto segment = segmentAt(m_segments, a.address);
        const int p = segment != m_segments.end() ? pool({ segment->second.stream, segment->second.isLargePool })
                                                  : pool({ a.stream, isLargePoolRequest(a.requestedSize) });
        m_poolOfAllocation[index] = p;
        m_active[static_cast<size_t>(p)] += a.blockSize;
        if (m_trackBlocks)
            m_blocks[a.address] = a.blockSize;
        return p;
    }

    int close(size_t index)
    {
        const int p = m_poolOfAllocation[index];
        if (p < 0)
            return -1;
        const Allocation& a = m_device.allocations[index];
        uint64_t& active = m_active[static_cast<size_t>(p)];
        active -= std::min(active, a.blockSize);
        if (m_trackBlocks)
            m_blocks.erase(a.address);
        m_poolOfAllocation[index] = -1;
        return p;
    }

    const DeviceAnalysis& m_device;
    bool m_trackBlocks;
    SegmentMap m_segments;
    std::map<uint64_t, uint64_t> m_blocks; // live blocks: address -> rounded size
    std::vector<int32_t> m_poolOfAllocation;
    std::vector<PoolKey> m_keys;
    std::map<PoolKey, int> m_index;
    std::vector<uint64_t> m_reserved; // per pool
    std::vector<uint64_t> m_active;
};

void record(PoolBucket& b, uint64_t reserved, uint64_t active, int64_t event)
{
    const uint64_t cached = reserved > active ? reserved - active : 0;
    b.minReserved = std::min(b.minReserved, reserved);
    b.maxReserved = std::max(b.maxReserved, reserved);
    b.minActive = std::min(b.minActive, active);
    b.maxActive = std::max(b.maxActive, active);
    if (cached > b.maxCached || b.maxCachedEvent < 0) {
        b.maxCached = cached;
        b.maxCachedEvent = event;
    }
}

void seed(PoolBucket& b, uint64_t reserved, uint64_t active, int64_t event)
{
    b.minReserved = b.maxReserved = reserved;
    b.minActive = b.maxActive = active;
    b.maxCached = reserved > active ? reserved - active : 0;
    b.maxCachedEvent = event;
}

} // namespace

std::vector<PoolSeries> poolSeries(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t firstEvent,
    int64_t lastEvent, int buckets, bool largestFreeBlocks)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    const auto n = static_cast<int64_t>(device.eventAllocation.size());
    firstEvent = std::clamp<int64_t>(firstEvent, 0, n);
    lastEvent = std::clamp<int64_t>(lastEvent, firstEvent, n);
    const int64_t span = lastEvent - firstEvent;
    if (!trace || span <= 0 || buckets <= 0)
        return {};
    const int64_t count = std::min<int64_t>(buckets, span);
    auto columnStart = [&](int64_t b) { return firstEvent + span * b / count; };

    PoolSweep sweep(snapshot, device, largestFreeBlocks);
    std::vector<std::vector<PoolBucket>> columns; // per pool, per column
    auto ensurePools = [&] {
        while (columns.size() < sweep.poolCount())
            columns.emplace_back(static_cast<size_t>(count));
    };

    int64_t column = -1;
    int64_t nextStart = columnStart(0);
    for (int64_t i = 0; i < lastEvent; ++i) {
        const int touched = sweep.apply(i, trace->events[static_cast<size_t>(i)]);
        if (i < firstEvent)
            continue;
        ensurePools();
        if (i == nextStart) {
            ++column;
            nextStart = column + 1 < count ? columnStart(column + 1) : lastEvent;
            for (size_t p = 0; p < sweep.poolCount(); ++p)
                seed(columns[p][static_cast<size_t>(column)], sweep.reserved(p), sweep.active(p), i);
        } else if (touched >= 0) {
            const auto p = static_cast<size_t>(touched);
            record(columns[p][static_cast<size_t>(column)], sweep.reserved(p), sweep.active(p), i);
        }
        if (largestFreeBlocks && i + 1 == nextStart) {
            const auto largest = sweep.largestFreeBlocks();
            for (size_t p = 0; p < largest.size(); ++p)
                columns[p][static_cast<size_t>(column)].largestFreeBlock = largest[p];
        }
    }

    std::vector<PoolSeries> result;
    for (size_t p = 0; p < columns.size(); ++p) {
        const bool used = std::any_of(columns[p].begin(), columns[p].end(),
            [](const PoolBucket& b) { return b.maxReserved > 0 || b.maxActive > 0; });
        if (!used)
            continue;
        PoolSeries series;
        series.key = sweep.key(p);
        series.buckets = std::move(columns[p]);
        for (int64_t b = 0; b < count; ++b) {
            PoolBucket& bucket = series.buckets[static_cast<size_t>(b)];
            bucket.firstEvent = columnStart(b);
            bucket.lastEvent = b + 1 < count ? columnStart(b + 1) : lastEvent;
            series.maxReserved = std::max(series.maxReserved, bucket.maxReserved);
            series.maxCached = std::max(series.maxCached, bucket.maxCached);
        }
        result.push_back(std::move(series));
    }
    std::sort(result.begin(), result.end(), [](const PoolSeries& a, const PoolSeries& b) { return a.key < b.key; });
    return result;
}

} // namespace oomlens
