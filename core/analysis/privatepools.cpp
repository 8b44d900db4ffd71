#include "core/analysis/privatepools.h"

#include "core/analysis/allocatorstate.h"
#include "core/analysis/poolowners.h"
#include "core/units.h"

#include <algorithm>
#include <map>
#include <unordered_set>

namespace oomlens {

PoolOwner poolOwner(PoolId id)
{
    if (id.isDefault())
        return PoolOwner::Default;
    return id.first != 0 ? PoolOwner::CudaGraph : PoolOwner::MemPool;
}

std::string poolName(PoolId id)
{
    const std::string pair = "(" + std::to_string(id.first) + ", " + std::to_string(id.second) + ")";
    switch (poolOwner(id)) {
    case PoolOwner::Default:
        return "default pool";
    case PoolOwner::CudaGraph:
        return "CUDA graph pool " + pair;
    case PoolOwner::MemPool:
        return "MemPool " + pair;
    }
    return pair;
}

bool PrivatePools::hasPrivate() const
{
    const auto isPrivate = [](const PoolId& id) { return !id.isDefault(); };
    return std::any_of(pools.begin(), pools.end(), [](const PoolAtDump& p) { return p.isPrivate(); })
        || std::any_of(entryPools.begin(), entryPools.end(), isPrivate);
}

uint64_t PrivatePools::privateReservedBytes() const
{
    uint64_t total = 0;
    for (const PoolAtDump& p : pools)
        total += p.isPrivate() ? p.reservedBytes : 0;
    return total;
}

uint64_t PrivatePools::privateFreeBytes() const
{
    uint64_t total = 0;
    for (const PoolAtDump& p : pools)
        total += p.isPrivate() ? p.freeBytes : 0;
    return total;
}

std::optional<PoolId> PrivatePools::poolOfEvent(int64_t event) const
{
    if (event < 0 || static_cast<size_t>(event) >= eventPool.size())
        return std::nullopt;
    const uint16_t pool = eventPool[static_cast<size_t>(event)];
    if (pool == 0 || pool > entryPools.size())
        return std::nullopt;
    return entryPools[pool - 1u];
}

std::optional<PoolId> PrivatePools::poolOf(const Allocation& allocation) const
{
    if (const auto recorded = poolOfEvent(allocation.allocEvent))
        return recorded;
    auto it = std::upper_bound(dumpSegments.begin(), dumpSegments.end(), allocation.address,
        [](uint64_t address, const DumpSegment& s) { return address < s.address; });
    if (it == dumpSegments.begin())
        return std::nullopt;
    --it;
    if (allocation.address >= it->address + it->size || allocation.allocEvent < it->createdAt)
        return std::nullopt;
    return it->pool;
}

namespace {

bool isSegmentEvent(TraceAction action)
{
    return action == TraceAction::SegmentAlloc || action == TraceAction::SegmentFree
        || action == TraceAction::SegmentMap || action == TraceAction::SegmentUnmap;
}

std::vector<PoolAtDump> poolsOf(const Snapshot& snapshot, int32_t device)
{
    std::map<std::pair<int64_t, int64_t>, PoolAtDump> byId;
    for (size_t i = 0; i < snapshot.segments.size(); ++i) {
        const Segment& segment = snapshot.segments[i];
        if (segment.device != device)
            continue;
        PoolAtDump& pool = byId[{ segment.pool.first, segment.pool.second }];
        pool.id = segment.pool;
        pool.segments.push_back(static_cast<uint32_t>(i));
        pool.reservedBytes += segment.totalSize;
        for (uint32_t b = 0; b < segment.blockCount; ++b) {
            const Block& block = snapshot.blocks[segment.firstBlock + b];
            switch (block.state) {
            case BlockState::ActiveAllocated:
                pool.allocatedBytes += block.size;
                ++pool.liveBlocks;
                break;
            case BlockState::ActivePendingFree:
                pool.pendingFreeBytes += block.size;
                ++pool.liveBlocks;
                break;
            case BlockState::Inactive:
                pool.freeBytes += block.size;
                pool.largestFreeBlock = std::max(pool.largestFreeBlock, block.size);
                break;
            case BlockState::Unknown:
                break;
            }
        }
    }
    std::vector<PoolAtDump> result;
    for (auto& [id, pool] : byId) // (0, 0) sorts first
        result.push_back(std::move(pool));
    return result;
}

// Undoes the trace from the dump backwards: a private segment counts from its segment_alloc
// on. Segments freed before the dump count only where their entries record a private pool_id.
void privateSeries(const DeviceTrace& trace, PrivatePools& result)
{
    const auto isPrivate = [&](size_t event) {
        const auto pool = result.poolOfEvent(static_cast<int64_t>(event));
        return pool && !pool->isDefault();
    };
    std::map<uint64_t, std::pair<uint64_t, bool>> live; // address -> size, private
    uint64_t total = 0;
    for (const PrivatePools::DumpSegment& s : result.dumpSegments) {
        live[s.address] = { s.size, !s.pool.isDefault() };
        total += s.pool.isDefault() ? 0 : s.size;
    }
    result.privateReservedAfter.assign(trace.events.size(), 0);
    std::map<uint64_t, size_t> createdAt; // dump segment address -> index into dumpSegments
    for (size_t i = 0; i < result.dumpSegments.size(); ++i)
        createdAt[result.dumpSegments[i].address] = i;
    for (auto i = static_cast<int64_t>(trace.events.size()) - 1; i >= 0; --i) {
        result.privateReservedAfter[static_cast<size_t>(i)] = total;
        const TraceEvent& e = trace.events[static_cast<size_t>(i)];
        if (!isSegmentEvent(e.action))
            continue;
        const bool adds = e.action == TraceAction::SegmentAlloc || e.action == TraceAction::SegmentMap;
        if (adds) {
            auto it = live.find(e.addr);
            if (it != live.end()) {
                total -= it->second.second ? it->second.first : 0;
                live.erase(it);
            }
        } else {
            // Going backwards, a released segment comes back; its entry may say whose it was.
            const bool released = isPrivate(static_cast<size_t>(i));
            live[e.addr] = { e.size, released };
            total += released ? e.size : 0;
        }
        // The last segment event at a dump segment's address, walking backwards the first, is
        // where that segment began.
        if (auto c = createdAt.find(e.addr); c != createdAt.end()) {
            result.dumpSegments[c->second].createdAt = i;
            createdAt.erase(c);
        }
    }
    result.initialPrivateReserved = total;
}

PrivatePoolsAtOom compareAtOom(const Snapshot& snapshot, const DeviceAnalysis& device, const DeviceTrace& trace,
    const PrivatePools& pools, int64_t oomEvent, std::optional<uint64_t> messageBytes)
{
    PrivatePoolsAtOom result;
    result.oomEvent = oomEvent;
    result.messageBytes = messageBytes;
    std::unordered_set<uint64_t> touched; // segment addresses changed between the oom and the dump
    for (auto i = static_cast<size_t>(oomEvent) + 1; i < trace.events.size(); ++i) {
        if (isSegmentEvent(trace.events[i].action))
            touched.insert(trace.events[i].addr);
    }
    std::map<uint64_t, PoolId> dumpPool;
    for (const Segment& s : snapshot.segments) {
        if (s.device == device.device)
            dumpPool[s.address] = s.pool;
    }
    // Where entries record pool_id: the pool of each segment address as of the oom, from its
    // latest segment_alloc/map before it, else its first segment_free/unmap after it.
    std::map<uint64_t, PoolId> entryPool;
    if (pools.entriesRecordPools()) {
        for (size_t i = 0; i < trace.events.size(); ++i) {
            const TraceEvent& e = trace.events[i];
            const auto pool = pools.poolOfEvent(static_cast<int64_t>(i));
            if (!pool || !isSegmentEvent(e.action))
                continue;
            const bool adds = e.action == TraceAction::SegmentAlloc || e.action == TraceAction::SegmentMap;
            if (i <= static_cast<size_t>(oomEvent) ? adds : !adds && !entryPool.count(e.addr))
                entryPool[e.addr] = *pool;
        }
    }
    const AllocatorState state = allocatorStateAt(snapshot, device, oomEvent);
    for (const StateSegment& s : state.segments) {
        auto known = dumpPool.find(s.address);
        std::optional<PoolId> pool;
        if (auto recorded = entryPool.find(s.address); recorded != entryPool.end())
            pool = recorded->second;
        else if (known != dumpPool.end() && !touched.count(s.address))
            pool = known->second;
        if (!pool)
            result.unattributedFreeBytes += s.freeBytes;
        else if (!pool->isDefault())
            result.privateFreeBytes += s.freeBytes;
    }
    const std::string traced = formatBytes(result.privateFreeBytes) + " cached free in private pools at the oom";
    const std::string unknown = result.unattributedFreeBytes > 0 ? " (" + formatBytes(result.unattributedFreeBytes)
            + " more free in segments released before the dump, whose pool the snapshot does not record)"
                                                                 : std::string();
    if (!messageBytes) {
        result.statement = "The trace shows " + traced + unknown + ".";
        return result;
    }
    // The message rounds to two decimals of its unit: allow that, and a little more.
    const uint64_t slack = std::max<uint64_t>(64 << 10, *messageBytes / 500);
    const uint64_t low = result.privateFreeBytes > slack ? result.privateFreeBytes - slack : 0;
    const uint64_t high = result.privateFreeBytes + result.unattributedFreeBytes + slack;
    result.agrees = *messageBytes >= low && *messageBytes <= high;
    const std::string printed
        = "The OOM message's " + formatBytes(*messageBytes) + " \"allocated in private pools\" is what they cache free";
    if (result.agrees && result.unattributedFreeBytes > 0 && *messageBytes > result.privateFreeBytes + slack) {
        result.statement = printed + ": it agrees with the trace's " + traced + " plus "
            + formatBytes(*messageBytes - result.privateFreeBytes)
            + " of segments released before the dump (their pool is not recorded; a destroyed MemPool "
              "releases its segments like this).";
    } else if (result.agrees) {
        result.statement = printed + ": it agrees with the trace's " + traced + ".";
    } else {
        result.statement = printed + ", but the trace shows " + traced + unknown
            + ": they do not agree (another oom, or pools the trace cannot see).";
    }
    return result;
}

} // namespace

PrivatePools privatePools(const Snapshot& snapshot, const DeviceAnalysis& device, std::optional<uint64_t> messageBytes)
{
    PrivatePools result;
    result.device = device.device;
    result.pools = poolsOf(snapshot, device.device);
    for (const Segment& s : snapshot.segments) {
        if (s.device == device.device)
            result.dumpSegments.push_back({ s.address, s.totalSize, s.pool, -1 });
    }
    std::sort(result.dumpSegments.begin(), result.dumpSegments.end(),
        [](const PrivatePools::DumpSegment& a, const PrivatePools::DumpSegment& b) { return a.address < b.address; });
    const DeviceTrace* trace = snapshot.trace(device.device);
    if (!trace) {
        namePoolHolders(snapshot, device, result);
        return result;
    }
    if (!snapshot.entryPools.empty()) {
        result.entryPools = snapshot.entryPools;
        result.eventPool.reserve(trace->events.size());
        for (const TraceEvent& e : trace->events)
            result.eventPool.push_back(e.pool);
    }
    privateSeries(*trace, result);
    namePoolHolders(snapshot, device, result);
    if (!device.ooms.empty() && (result.hasPrivate() || messageBytes))
        result.atOom = compareAtOom(snapshot, device, *trace, result, device.ooms.back().eventIndex, messageBytes);
    return result;
}

} // namespace oomlens
