#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <compare>
#include <cstdint>
#include <vector>

namespace oomlens {

// The caching allocator's segments and blocks at one moment, rebuilt from the dump-time
// segments by undoing segment events backwards (as memory_viz's Allocator State History does)
// and filled with the allocations live at that moment.
struct StateBlock
{
    uint64_t address = 0;
    uint64_t size = 0; // rounded block size (exact for blocks that survive to the dump)
    int32_t allocation = -1; // index into DeviceAnalysis::allocations
    bool pendingFree = false; // freed by the caller, still in use by another stream
};

struct StateSegment
{
    uint64_t address = 0;
    uint64_t size = 0;
    int64_t stream = 0;
    bool isLargePool = true;
    bool isExpandable = false;
    PoolId pool;
    std::vector<StateBlock> blocks; // live blocks, by address
    uint64_t freeBytes = 0;
    uint64_t largestFree = 0; // largest gap between live blocks
};

// A pool as the trace can tell them apart: one stream's small pool (requests up to 1 MiB,
// 2 MiB segments) or large pool. CUDA-graph private pools are not recorded per event.
struct PoolKey
{
    int64_t stream = 0;
    bool largePool = true;
    friend auto operator<=>(const PoolKey&, const PoolKey&) = default;
};

// One pool at one moment. reserved - active is what the pool caches; largestFreeBlock is what
// the next request to it could get without a new segment.
struct PoolState
{
    PoolKey key;
    size_t segments = 0;
    uint64_t reservedBytes = 0;
    uint64_t activeBytes = 0;
    uint64_t freeBytes = 0;
    uint64_t largestFreeBlock = 0;
};

struct AllocatorState
{
    int64_t event = -1; // the state right after this event; -1: before the first
    std::vector<StateSegment> segments; // by address
    uint64_t reservedBytes = 0;
    uint64_t activeBytes = 0; // rounded sizes of live blocks

    // Largest free block a request could be served from: same stream, same pool kind
    // (small pool for requests <= 1 MiB). stream < 0: any stream.
    uint64_t largestFreeBlock(int64_t stream, bool largePool) const;
    uint64_t freeBytes(int64_t stream, bool largePool) const;
    // Per stream and pool kind, ordered by key.
    std::vector<PoolState> pools() const;
    // The segment holding `address`, or null.
    const StateSegment* segmentAt(uint64_t address) const;
};

AllocatorState allocatorStateAt(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event);

// Requests above 1 MiB come from the large pool (c10 kSmallSize).
constexpr bool isLargePoolRequest(uint64_t bytes)
{
    return bytes > (uint64_t(1) << 20);
}

} // namespace oomlens
