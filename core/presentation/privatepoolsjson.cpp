#include "core/presentation/privatepoolsjson.h"

#include "core/analysis/poolowners.h"
#include "core/diagnosis/caselinks.h"

namespace oomlens {

using json = nlohmann::ordered_json;

std::string_view poolOwnerName(PoolOwner owner)
{
    switch (owner) {
    case PoolOwner::Default:
        return "default";
    case PoolOwner::CudaGraph:
        return "cuda_graph";
    case PoolOwner::MemPool:
        return "mempool";
    }
    return "default";
}

std::optional<PrivatePools> casePrivatePools(const Case& input, const CaseAnalysis& analysis, size_t snapshotIndex)
{
    if (snapshotIndex >= analysis.snapshots.size())
        return std::nullopt;
    const SnapshotAnalysis& snapshot = analysis.snapshots[snapshotIndex];
    const DeviceAnalysis* device = snapshot.primary();
    if (!snapshot.snapshot || !device)
        return std::nullopt;
    std::optional<uint64_t> messageBytes;
    const MessageLink link = linkMessage(input.text, *device, static_cast<int>(snapshotIndex));
    if (link.messageIndex)
        messageBytes = input.text.oomMessages[*link.messageIndex].privatePoolsBytes;
    // A message that prints no private-pools figure means PyTorch found none cached.
    if (link.messageIndex && !messageBytes && input.text.oomMessages[*link.messageIndex].allocatedBytes)
        messageBytes = 0;
    return privatePools(*snapshot.snapshot, *device, messageBytes);
}

json privatePoolsToJson(const Case& input, const CaseAnalysis& analysis)
{
    json all = json::array();
    for (size_t i = 0; i < analysis.snapshots.size(); ++i) {
        const auto pools = casePrivatePools(input, analysis, i);
        if (!pools) {
            all.push_back(nullptr);
            continue;
        }
        json list = json::array();
        for (const PoolAtDump& pool : pools->pools) {
            list.push_back({ { "id", { pool.id.first, pool.id.second } },
                { "owner", poolOwnerName(poolOwner(pool.id)) }, { "name", poolName(pool.id) },
                { "segments", pool.segments.size() }, { "reserved_bytes", pool.reservedBytes },
                { "allocated_bytes", pool.allocatedBytes }, { "pending_free_bytes", pool.pendingFreeBytes },
                { "free_bytes", pool.freeBytes }, { "largest_free_block", pool.largestFreeBlock },
                { "live_blocks", pool.liveBlocks },
                { "held_by",
                    { { "role", poolRoleName(pool.heldBy.role) },
                        { "engine",
                            pool.heldBy.engine == Engine::None ? json(nullptr) : json(engineName(pool.heldBy.engine)) },
                        { "text", pool.heldBy.text }, { "live_bytes", pool.heldBy.liveBytes },
                        { "role_bytes", pool.heldBy.roleBytes } } } });
        }
        json atOom = nullptr;
        if (pools->atOom) {
            const PrivatePoolsAtOom& oom = *pools->atOom;
            atOom = { { "event_index", oom.oomEvent }, { "private_free_bytes", oom.privateFreeBytes },
                { "unattributed_free_bytes", oom.unattributedFreeBytes },
                { "message_bytes", oom.messageBytes ? json(*oom.messageBytes) : json(nullptr) },
                { "agrees", oom.messageBytes ? json(oom.agrees) : json(nullptr) }, { "statement", oom.statement } };
        }
        uint64_t peak = pools->initialPrivateReserved;
        for (uint64_t bytes : pools->privateReservedAfter)
            peak = std::max(peak, bytes);
        all.push_back({ { "snapshot", i }, { "device", pools->device }, { "has_private", pools->hasPrivate() },
            { "private_reserved_bytes", pools->privateReservedBytes() },
            { "private_free_bytes", pools->privateFreeBytes() }, { "peak_private_reserved_bytes", peak },
            { "pools", std::move(list) }, { "at_oom", std::move(atOom) } });
    }
    return all;
}

} // namespace oomlens
