#include "core/analysis/poolowners.h"

#include "core/analysis/stackfeatures.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <array>
#include <map>

namespace oomlens {

namespace {

// The live bytes of one pool by what holds them.
struct PoolTally
{
    enum Share { KvCache, EngineWeights, EngineOther, Trainer, Other, ShareCount };
    std::array<uint64_t, ShareCount> bytes {};
    std::map<Engine, uint64_t> engineBytes;
    StackId largestTrainerStack = FrameTable::emptyStack();
    uint64_t largestTrainerBytes = 0;

    uint64_t total() const
    {
        uint64_t sum = 0;
        for (uint64_t b : bytes)
            sum += b;
        return sum;
    }
    Engine engine() const
    {
        Engine best = Engine::None;
        uint64_t most = 0;
        for (const auto& [engine, b] : engineBytes) {
            if (b > most) {
                most = b;
                best = engine;
            }
        }
        return best;
    }
};

bool isTrainerState(Category c)
{
    return c == Category::Parameters || c == Category::Gradients || c == Category::OptimizerState
        || c == Category::Communication;
}

// "Megatron", "Megatron, driven by slime": the training framework and the RL framework around it,
// as the largest trainer allocation's frames name them.
std::string trainerFrameworks(const Snapshot& snapshot, StackId stack)
{
    if (!snapshot.frames || stack == FrameTable::emptyStack())
        return {};
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> trainers
        = { { { "megatron", "Megatron" }, { "deepspeed", "DeepSpeed" }, { "distributed/fsdp", "FSDP" },
            { "fully_shard", "FSDP2" } } };
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> drivers
        = { { { "/verl/", "verl" }, { "/slime/", "slime" }, { "openrlhf", "OpenRLHF" }, { "/trl/", "TRL" },
            { "nemo_rl", "NeMo-RL" }, { "/areal/", "AReaL" } } };
    std::string_view trainer, driver;
    for (FrameId frame : snapshot.frames->stack(stack)) {
        const std::string_view file = snapshot.strings->get(snapshot.frames->frame(frame).filename);
        for (const auto& [marker, label] : trainers) {
            if (trainer.empty() && contains(file, marker))
                trainer = label;
        }
        for (const auto& [marker, label] : drivers) {
            if (driver.empty() && contains(file, marker))
                driver = label;
        }
    }
    std::string text(trainer);
    if (!driver.empty())
        text += (text.empty() ? "" : ", ") + std::string("driven by ") + std::string(driver);
    return text;
}

PoolHolder readHolder(const Snapshot& snapshot, const PoolAtDump& pool, const PoolTally& tally)
{
    PoolHolder holder;
    holder.liveBytes = tally.total();
    holder.engine = tally.engine();
    const std::string engine(engineLabel(holder.engine));
    const bool memPool = poolOwner(pool.id) == PoolOwner::MemPool;
    if (poolOwner(pool.id) == PoolOwner::CudaGraph) {
        holder.role = PoolRole::CudaGraphs;
        holder.roleBytes = holder.liveBytes;
        holder.text = engine.empty() ? "CUDA graphs: the outputs and scratch of captured graphs"
                                     : "CUDA graphs captured by " + engine + " (its decode steps' outputs and scratch)";
        return holder;
    }
    if (holder.liveBytes == 0)
        return holder;
    const auto top = std::max_element(tally.bytes.begin(), tally.bytes.end());
    const auto share = static_cast<PoolTally::Share>(top - tally.bytes.begin());
    if (2 * *top < holder.liveBytes || share == PoolTally::Other) {
        holder.engine = Engine::None;
        if (!pool.isPrivate())
            return holder;
        holder.text = "mixed: "
            + formatBytes(tally.bytes[PoolTally::KvCache] + tally.bytes[PoolTally::EngineWeights]
                + tally.bytes[PoolTally::EngineOther])
            + " of an inference engine's, " + formatBytes(tally.bytes[PoolTally::Trainer]) + " of the trainer's state, "
            + formatBytes(tally.bytes[PoolTally::Other]) + " else";
        return holder;
    }
    holder.roleBytes = *top;
    switch (share) {
    case PoolTally::KvCache:
        holder.role = PoolRole::EngineKvCache;
        holder.text = (engine.empty() ? std::string("a") : engine + "'s") + " KV cache";
        if (memPool && holder.engine == Engine::Vllm)
            holder.text += ": its sleep-mode allocator pool (tag \"kv_cache\"), discarded on sleep";
        else if (memPool && holder.engine == Engine::Sglang)
            holder.text += ": a torch_memory_saver region, released on pause";
        break;
    case PoolTally::EngineWeights:
        holder.role = PoolRole::EngineWeights;
        holder.text = (engine.empty() ? std::string("an inference engine") : engine) + "'s weights (the rollout copy)";
        if (memPool && holder.engine == Engine::Vllm)
            holder.text += ": its sleep-mode allocator pool (tag \"weights\"), offloaded on sleep";
        else if (memPool && holder.engine == Engine::Sglang)
            holder.text += ": a torch_memory_saver region, released on pause";
        break;
    case PoolTally::EngineOther:
        holder.role = PoolRole::Engine;
        holder.text = (engine.empty() ? std::string("an inference engine") : engine) + "'s working memory";
        break;
    case PoolTally::Trainer: {
        holder.role = PoolRole::TrainerState;
        holder.engine = Engine::None; // an engine's scratch beside the trainer's state does not make it the engine's
        const std::string frameworks = trainerFrameworks(snapshot, tally.largestTrainerStack);
        holder.text = "the trainer's state" + (frameworks.empty() ? std::string() : " (" + frameworks + ")")
            + ": parameters, gradients, optimizer state";
        if (memPool)
            holder.text += "; a MemPool around the trainer, as torch_memory_saver's region() makes to pause it "
                           "during rollout";
        break;
    }
    case PoolTally::Other:
    case PoolTally::ShareCount:
        break;
    }
    return holder;
}

} // namespace

std::string poolHolderShort(const PoolHolder& holder)
{
    const std::string engine(engineLabel(holder.engine));
    const std::string prefix = engine.empty() ? std::string() : engine + " ";
    switch (holder.role) {
    case PoolRole::EngineKvCache:
        return prefix + "KV cache";
    case PoolRole::EngineWeights:
        return prefix + "weights";
    case PoolRole::Engine:
        return engine.empty() ? "inference engine" : prefix + "working memory";
    case PoolRole::TrainerState:
        return "trainer state";
    case PoolRole::CudaGraphs:
        return "CUDA graphs";
    case PoolRole::Unknown:
        break;
    }
    return {};
}

std::string poolLabel(const PrivatePools& pools, PoolId id)
{
    std::string label = poolName(id);
    // A graph pool holding graphs says nothing its name does not ("CUDA graph pool (1, 0)").
    const auto saysMore = [&](const PoolHolder& holder) {
        return holder.role != PoolRole::Unknown
            && !(holder.role == PoolRole::CudaGraphs && poolOwner(id) == PoolOwner::CudaGraph);
    };
    for (const PoolAtDump& pool : pools.pools) {
        if (pool.id == id && saysMore(pool.heldBy))
            return label + " \u00b7 " + poolHolderShort(pool.heldBy);
    }
    return label;
}

std::string_view poolRoleName(PoolRole role)
{
    switch (role) {
    case PoolRole::EngineKvCache:
        return "engine_kv_cache";
    case PoolRole::EngineWeights:
        return "engine_weights";
    case PoolRole::Engine:
        return "engine";
    case PoolRole::TrainerState:
        return "trainer_state";
    case PoolRole::CudaGraphs:
        return "cuda_graphs";
    case PoolRole::Unknown:
        break;
    }
    return "unknown";
}

void namePoolHolders(const Snapshot& snapshot, const DeviceAnalysis& device, PrivatePools& pools)
{
    if (pools.pools.empty())
        return;
    std::map<std::pair<int64_t, int64_t>, PoolTally> tallies;
    StackFeatures features(snapshot);
    for (const Allocation& a : device.allocations) {
        if (a.freeEvent >= 0)
            continue;
        const auto pool = pools.poolOf(a);
        if (!pool)
            continue;
        PoolTally& tally = tallies[{ pool->first, pool->second }];
        const bool stackKnown = a.stack != FrameTable::emptyStack() && snapshot.frames;
        const uint32_t f = stackKnown ? features.features(a.stack) : 0u;
        const Engine engine = stackKnown ? features.engine(a.stack) : Engine::None;
        const uint64_t bytes = a.blockSize;
        PoolTally::Share share = PoolTally::Other;
        if (a.category == Category::KvCache)
            share = PoolTally::KvCache;
        else if (f & FeatureEngine)
            share = a.category == Category::Parameters ? PoolTally::EngineWeights : PoolTally::EngineOther;
        else if (isTrainerState(a.category))
            share = PoolTally::Trainer;
        tally.bytes[share] += bytes;
        if (engine != Engine::None)
            tally.engineBytes[engine] += bytes;
        if (share == PoolTally::Trainer && bytes > tally.largestTrainerBytes) {
            tally.largestTrainerBytes = bytes;
            tally.largestTrainerStack = a.stack;
        }
    }
    static const PoolTally empty;
    for (PoolAtDump& pool : pools.pools) {
        auto it = tallies.find({ pool.id.first, pool.id.second });
        pool.heldBy = readHolder(snapshot, pool, it == tallies.end() ? empty : it->second);
    }
}

} // namespace oomlens
