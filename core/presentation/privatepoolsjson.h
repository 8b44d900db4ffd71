#pragma once

#include "core/analysis/privatepools.h"
#include "core/case.h"
#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// The private pools of one snapshot's primary device, with the OOM message that belongs to it
// (core/diagnosis/caselinks.h) compared at its oom event. nullopt without a primary device.
std::optional<PrivatePools> casePrivatePools(const Case& input, const CaseAnalysis& analysis, size_t snapshotIndex);

// `diagnose --json`'s "private_pools": one entry per snapshot, null where the snapshot has no
// primary device. Each pool: id, owner, segments, reserved/allocated/pending-free/free bytes.
nlohmann::ordered_json privatePoolsToJson(const Case& input, const CaseAnalysis& analysis);

std::string_view poolOwnerName(PoolOwner owner); // "default", "cuda_graph", "mempool"

} // namespace oomlens
