#pragma once

// The JSON the moment tools (live_at, evidence, stack_history) answer with: a moment of a
// device's trace, and an allocation with its category, reason, phase, step and stack. Read from
// the snapshot analysis and core/analysis/livequery.h, which the app's live table and the report
// read too.

#include "app/mcp/jsonrpc.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <vector>

namespace oomlens::mcp {

enum class StackFrames { User, All };

// The state right after `event` (-1: before the first event): its time, phase, step, and the
// bytes allocated (requested) and reserved then.
Json momentToJson(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event);

// One allocation: "allocation" (its index in the analysis, stable for a file and device),
// "bytes" (requested), "block_bytes", "category", "reason", "phase", "step", "allocated_at_event"
// and "freed_at_event" (null: older than the trace / still alive), "stream", "address" and its
// "stack" ("file:line:function", innermost first).
Json allocationToJson(const Snapshot& snapshot, const DeviceAnalysis& device, uint32_t index, StackFrames frames);

// Bytes by category, every category named (product.md's keys).
Json categoryBytesToJson(const CategoryBytes& bytes);

// The allocations live right after `event`, largest first, at most `limit`.
std::vector<uint32_t> largestLive(const DeviceAnalysis& device, int64_t event, size_t limit);

} // namespace oomlens::mcp
