#pragma once

#include "core/analysis/enginemarkers.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Who made a pool, as its id tells: PyTorch numbers the pools of CUDA graphs (first, 0) and the
// MemPools a user creates (0, second); (0, 0) is the default pool every other allocation uses.
enum class PoolOwner : uint8_t { Default, CudaGraph, MemPool };

PoolOwner poolOwner(PoolId id);
// "default pool", "CUDA graph pool (1, 0)", "MemPool (0, 1)".
std::string poolName(PoolId id);

// Whose memory a pool holds, read from the stacks of its live blocks (poolowners.h): a pool's id
// says only who created it (a graph capture, a MemPool), not what lives in it.
enum class PoolRole : uint8_t { Unknown, EngineKvCache, EngineWeights, Engine, TrainerState, CudaGraphs };

struct PoolHolder
{
    PoolRole role = PoolRole::Unknown;
    Engine engine = Engine::None; // the engine whose stacks hold most of it, for the engine roles
    std::string text; // "vLLM's KV cache: its sleep-mode allocator pool (tag \"kv_cache\")"
    uint64_t liveBytes = 0; // the live blocks' bytes the reading rests on
    uint64_t roleBytes = 0; // of which the role's
};

// One pool at the dump, from the segments' `segment_pool_id` and their blocks. A private pool's
// free bytes stay with it: only requests inside that graph capture or `use_mem_pool` can use them,
// so for every other request they are reserved and unusable (the pool's fragmentation).
struct PoolAtDump
{
    PoolId id;
    std::vector<uint32_t> segments; // indices into Snapshot::segments
    uint64_t reservedBytes = 0;
    uint64_t allocatedBytes = 0; // active_allocated blocks
    uint64_t pendingFreeBytes = 0; // freed by the caller, still in use by a stream (or a graph)
    uint64_t freeBytes = 0; // inactive blocks: cached by the pool
    uint64_t largestFreeBlock = 0;
    size_t liveBlocks = 0;
    PoolHolder heldBy;
    bool isPrivate() const { return !id.isDefault(); }
};

// The OOM message's "allocated in private pools (e.g., CUDA Graphs)" against the trace. Despite
// its wording PyTorch prints the *free* blocks its private pools cache, so that is what is
// compared: the free bytes of the private segments live at the oom event.
struct PrivatePoolsAtOom
{
    int64_t oomEvent = -1;
    uint64_t privateFreeBytes = 0; // in segments whose pool the dump records
    // Free bytes of segments live at the oom event but freed before the dump whose pool no trace
    // entry records either (PyTorch 2.11 writes no pool_id per entry): they may be private too.
    uint64_t unattributedFreeBytes = 0;
    std::optional<uint64_t> messageBytes; // the OOM message's figure, when linked
    bool agrees = false; // the message lies between privateFreeBytes and that plus unattributed
    std::string statement; // one sentence: the figures and whether they agree
};

struct PrivatePools
{
    int32_t device = 0;
    std::vector<PoolAtDump> pools; // default first (when present), then private pools by id
    // Bytes reserved by the private pools the dump records, right after each trace event (sized
    // like the device's trace; empty without a trace) and before the first event.
    std::vector<uint64_t> privateReservedAfter;
    uint64_t initialPrivateReserved = 0;
    std::optional<PrivatePoolsAtOom> atOom;

    // A private pool at the dump, or named by a trace entry's pool_id (one released before it).
    bool hasPrivate() const;
    uint64_t privateReservedBytes() const;
    uint64_t privateFreeBytes() const;
    // The pool of the block an allocation lived in: the pool_id its alloc entry records (newest
    // PyTorch), else the dump segment at its address, created (segment_alloc) no later than the
    // allocation. nullopt for blocks of segments freed before the dump when no entry says.
    std::optional<PoolId> poolOf(const Allocation& allocation) const;

    // Trace entries that record a pool_id (newest PyTorch): the pool of each event as
    // Snapshot::poolOf gives it, 0 for none. Empty when no entry records one.
    std::vector<uint16_t> eventPool;
    std::vector<PoolId> entryPools;
    bool entriesRecordPools() const { return !entryPools.empty(); }
    std::optional<PoolId> poolOfEvent(int64_t event) const;

    struct DumpSegment
    {
        uint64_t address = 0;
        uint64_t size = 0;
        PoolId pool;
        int64_t createdAt = -1; // its segment_alloc in the trace; -1: older than the trace
    };
    std::vector<DumpSegment> dumpSegments; // this device's, by address
};

// Everything above for one device; messageBytes is the linked OOM message's private-pools figure.
PrivatePools privatePools(
    const Snapshot& snapshot, const DeviceAnalysis& device, std::optional<uint64_t> messageBytes = std::nullopt);

} // namespace oomlens
