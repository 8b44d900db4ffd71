#pragma once

#include "core/analysis/privatepools.h"

#include <string>
#include <string_view>

namespace oomlens {

// Names what each pool holds (PoolAtDump::heldBy) from the categories and stacks of the blocks live
// in it at the dump: an engine's KV cache or weights (vLLM's sleep-mode allocator keeps each in a
// MemPool of its own, tagged "kv_cache" and "weights"; SGLang's and torch_memory_saver's regions),
// the trainer's state (a framework that pauses the trainer during rollout), CUDA graphs. A role
// needs at least half of the pool's live bytes; otherwise the pool stays Unknown with the mix said.
// Needs the categories (categorize); called by privatePools.
void namePoolHolders(const Snapshot& snapshot, const DeviceAnalysis& device, PrivatePools& pools);

// A pool as the views label it: "MemPool (0, 2) · vLLM KV cache"; the id's name alone when what it
// holds is unknown.
std::string poolLabel(const PrivatePools& pools, PoolId id);
// "vLLM KV cache", "vLLM weights", "trainer state", "CUDA graphs"; empty when unknown.
std::string poolHolderShort(const PoolHolder& holder);

// JSON values: "engine_kv_cache", "engine_weights", "engine", "trainer_state", "cuda_graphs", "unknown".
std::string_view poolRoleName(PoolRole role);

} // namespace oomlens
