#pragma once

// The timeline of one snapshot: every allocation as an interval, reserved memory over time,
// phases and steps, categories with their reasons, the peak and the OOM moments.
// Companion queries live beside this header: series.h (downsampled curves), livequery.h (live
// set, top stacks, call tree), allocatorstate.h (segments, free blocks and per-pool totals at
// any event), poolseries.h (reserved, active and largest free block per stream and pool over
// time).

#include "core/analysis/annotationspans.h"
#include "core/analysis/tracehistory.h"
#include "core/phase.h"
#include "core/snapshot.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

class CategoryRules;

using CategoryBytes = std::array<uint64_t, categoryCount>; // indexed by Category

// One allocation's lifetime, reconstructed from the trace and the dump-time state.
// Event indices refer to the device trace; an allocation is live after event e when
// allocEvent <= e and (freeEvent == -1 or e < freeEvent).
struct Allocation
{
    uint64_t address = 0;
    uint64_t requestedSize = 0; // `size` of the alloc event (what memory_viz plots)
    uint64_t blockSize = 0; // rounded size: exact when the block survives to the dump, else estimated
    int64_t allocEvent = -1; // index in the device trace; -1: allocated before the trace began
    int64_t freeEvent = -1; // free_completed index; -1: still alive at dump time
    int64_t freeRequestedEvent = -1;
    StackId stack = FrameTable::emptyStack();
    int64_t stream = 0;
    Category category = Category::Unknown;
    uint16_t reason = 0; // index into DeviceAnalysis::reasons
    Phase phase = Phase::Unknown; // phase at allocation
    int32_t step = -1; // training step at allocation; -1 unknown

    bool olderThanTrace() const { return allocEvent < 0; }
    bool liveAfter(int64_t event) const { return allocEvent <= event && (freeEvent < 0 || event < freeEvent); }
    // The program had dropped its last reference by `event` (free_requested); the block may still
    // wait for another stream's work before the allocator takes it back (free_completed).
    bool releasedBy(int64_t event) const { return freeRequestedEvent >= 0 && freeRequestedEvent <= event; }
    // The allocator records free_requested and, when no other stream uses the block, free_completed
    // right after it (CUDACachingAllocator::free -> free_block). Anything in between, or no
    // free_completed at all, means the block waited for another stream's event.
    bool freeWaited() const { return freeRequestedEvent >= 0 && (freeEvent < 0 || freeEvent > freeRequestedEvent + 1); }
};

struct OomAnalysis
{
    int64_t eventIndex = -1;
    int64_t timeUs = 0;
    int64_t stream = 0;
    uint64_t requestedBytes = 0; // the oom event's size (rounded request)
    uint64_t deviceFreeBytes = 0;
    uint64_t allocatedBytes = 0; // requested bytes live at the OOM
    uint64_t reservedBytes = 0;
    uint64_t largestFreeBlock = 0; // across the pool (small/large) and stream the request would come from
    uint64_t freeInPoolBytes = 0; // all cached free bytes of that pool and stream
    CategoryBytes liveByCategory {};
    Phase phase = Phase::Unknown;
    int32_t step = -1;
    StackId stack = FrameTable::emptyStack(); // where the failing request came from, when recorded
};

// A maximal run of events in one phase and step; the GUI shades these.
struct PhaseSpan
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // inclusive
    Phase phase = Phase::Unknown;
    int32_t step = -1;
};

// A maximal run of events in one known phase, whatever the step: what every timeline (the app's,
// the report's) shades. Built from the PhaseSpans, Unknown runs left out.
struct PhaseRun
{
    int64_t firstEvent = 0;
    int64_t lastEvent = 0; // inclusive
    Phase phase = Phase::Unknown;
};

// The first event of a known training step, where the timelines draw the step's line.
struct StepStart
{
    int64_t event = 0;
    int32_t step = -1;
};

// The trace's clock as the timelines draw it. Eras without time_us write 0, so the axis starts at
// the first event that has a time; time_us is not strictly monotonic, so a time on the axis is
// the running maximum (series.h timeSinceStart).
struct TimeAxis
{
    int64_t originUs = 0; // the first non-zero time_us
    int64_t firstUs = 0; // the first and the last event's own time_us: the trace's span as recorded
    int64_t lastUs = 0;
    bool hasTime = false; // two events or more and the clock advances past the origin
};

struct DeviceAnalysis
{
    int32_t device = 0;
    std::vector<Allocation> allocations; // ordered by allocEvent; older-than-trace ones first
    std::vector<std::string> reasons; // category reasons, shared by many allocations
    std::vector<Phase> eventPhase; // per trace event
    std::vector<int32_t> eventStep; // per trace event, -1 unknown; step 0 = before the first step start
    std::vector<PhaseSpan> phaseSpans;
    std::vector<PhaseRun> phaseRuns;
    std::vector<StepStart> stepStarts; // each change to another known step, in event order
    TimeAxis timeAxis;
    uint64_t peakAllocatedBytes = 0; // requested bytes, allocations older than the trace included
    int64_t peakEvent = -1; // the peak holds right after this event; -1: before the first event
    int64_t peakTimeUs = 0;
    CategoryBytes categoriesAtPeak {}; // adds up to peakAllocatedBytes
    uint64_t peakReservedBytes = 0;
    std::vector<OomAnalysis> ooms;
    int32_t stepCount = 0; // steps that start inside the trace
    bool traceTruncated = false; // the ring buffer started mid-run

    // Per-event series (all sized like the trace). eventAllocation: the allocation an alloc,
    // free_requested or free_completed event concerns, else -1. allocatedAfter/reservedAfter:
    // requested bytes live and bytes reserved right after the event.
    std::vector<int32_t> eventAllocation;
    std::vector<uint64_t> allocatedAfter;
    std::vector<uint64_t> reservedAfter;
    uint64_t initialAllocatedBytes = 0; // live before the first event (older than the trace)
    uint64_t initialReservedBytes = 0;
    // The curves by category are series.h's TimelineSeries, built from these once per consumer.
    static constexpr int64_t checkpointInterval = 16;
    // Running maximum of time_us over the events before k * checkpointInterval (time_us is not
    // strictly monotonic); lets series.h find the event at a time, and the time of an event on
    // the monotonic axis the timeline draws, by reading at most 16 events: a redraw asks for a few
    // thousand of them. Half a byte per event, where a table of every event's time would cost a
    // 10M-event trace 80 MB written once.
    std::vector<int64_t> timeCheckpoints;

    std::vector<std::string> warnings; // inconsistencies met while reconstructing
    // How much of the run the trace saw (ring buffer, late start), with the backend of the
    // snapshot's frames; a consumer holding the case sets backend from snapshotBackendOf, which
    // also reads the OOM message.
    TraceHistory history;
    // The named spans over the trace: record_function ranges, the user's metadata runs and
    // activation checkpointing's recompute, in start order (annotationspans.h, recomputespans.h's
    // annotationAndRecomputeSpans). The app's timeline, its hover and tables, and the report's
    // chart all draw these.
    std::vector<AnnotationSpan> annotationSpans;
};

struct SnapshotAnalysis
{
    std::shared_ptr<const Snapshot> snapshot;
    std::vector<DeviceAnalysis> devices;
    int32_t primaryDevice = 0; // --device N, else the oom event's device, else most trace events
    std::string rulesError; // AnalysisOptions::rulesError: the user's rules were not applied
    const DeviceAnalysis* device(int32_t ordinal) const;
    const DeviceAnalysis* primary() const { return device(primaryDevice); }
};

struct AnalysisOptions
{
    std::optional<int32_t> device;
    // The user's category rules (`--rules FILE`, Settings), read and parsed where the inputs are
    // read (parsers/categoryrulesparser.h); null for none.
    std::shared_ptr<const CategoryRules> rules;
    // Why the user's rules are not applied (unreadable file, bad syntax); every snapshot's
    // analysis repeats it, so that the text, the JSON and the window say so.
    std::string rulesError;
    // Set when the reader of the result has gone (the app's Cancel, an MCP client's
    // notifications/cancelled): checked between snapshots, devices and stages, after which the
    // analysis returns incomplete. Whoever sets it drops the result (opening/opening.h does).
    const std::atomic_bool* cancel = nullptr;
    bool cancelled() const { return cancel && cancel->load(std::memory_order_relaxed); }
};

SnapshotAnalysis analyzeSnapshot(std::shared_ptr<const Snapshot> snapshot, const AnalysisOptions& options = {});

} // namespace oomlens
