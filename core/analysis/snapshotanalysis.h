#pragma once

// DRAFT interface (owned by the timeline/categories work, issue 4): refine freely, but keep
// these names so the diagnosis, GUI and report code can build against them.

#include "core/phase.h"
#include "core/snapshot.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

using CategoryBytes = std::array<uint64_t, categoryCount>; // indexed by Category

// One allocation's lifetime, reconstructed from the trace and the dump-time state.
struct Allocation {
    uint64_t address = 0;
    uint64_t requestedSize = 0;  // `size` of the alloc event (what memory_viz plots)
    uint64_t blockSize = 0;      // rounded size when known, else 0
    int64_t allocEvent = -1;     // index in the device trace; -1: allocated before the trace began
    int64_t freeEvent = -1;      // free_completed index; -1: still alive at dump time
    int64_t freeRequestedEvent = -1;
    StackId stack = FrameTable::emptyStack();
    int64_t stream = 0;
    Category category = Category::Unknown;
    uint16_t reason = 0;         // index into DeviceAnalysis::reasons
    Phase phase = Phase::Unknown; // phase at allocation
    int32_t step = -1;           // training step at allocation; -1 unknown
};

struct OomAnalysis {
    int64_t eventIndex = -1;
    int64_t timeUs = 0;
    uint64_t requestedBytes = 0;  // the oom event's size (rounded request)
    uint64_t deviceFreeBytes = 0;
    uint64_t allocatedBytes = 0;  // requested bytes live at the OOM
    uint64_t reservedBytes = 0;
    uint64_t largestFreeBlock = 0; // across the pool the request would come from
    CategoryBytes liveByCategory{};
    Phase phase = Phase::Unknown;
    int32_t step = -1;
};

struct DeviceAnalysis {
    int32_t device = 0;
    std::vector<Allocation> allocations;
    std::vector<std::string> reasons;       // category reasons, shared by many allocations
    std::vector<Phase> eventPhase;          // per trace event
    std::vector<int32_t> eventStep;         // per trace event, -1 unknown
    uint64_t peakAllocatedBytes = 0;        // requested bytes, allocations older than the trace included
    int64_t peakEvent = -1;
    int64_t peakTimeUs = 0;
    CategoryBytes categoriesAtPeak{};       // adds up to peakAllocatedBytes
    uint64_t peakReservedBytes = 0;
    std::vector<OomAnalysis> ooms;
    int32_t stepCount = 0;
    bool traceTruncated = false;            // the ring buffer started mid-run
};

struct SnapshotAnalysis {
    std::shared_ptr<const Snapshot> snapshot;
    std::vector<DeviceAnalysis> devices;
    int32_t primaryDevice = 0; // --device N, else the oom event's device, else most trace events
    const DeviceAnalysis* device(int32_t ordinal) const;
    const DeviceAnalysis* primary() const { return device(primaryDevice); }
};

struct AnalysisOptions {
    std::optional<int32_t> device;
    std::string rulesPath; // user category rules (JSON or YAML), empty for none
};

SnapshotAnalysis analyzeSnapshot(std::shared_ptr<const Snapshot> snapshot, const AnalysisOptions& options = {});

} // namespace oomlens
