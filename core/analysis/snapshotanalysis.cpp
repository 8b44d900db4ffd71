#include "core/analysis/snapshotanalysis.h"

#include "core/analysis/allocatorstate.h"
#include "core/analysis/categorizer.h"
#include "core/analysis/categoryrules.h"
#include "core/analysis/livequery.h"
#include "core/analysis/phaseruns.h"
#include "core/analysis/phases.h"
#include "core/analysis/recomputespans.h"
#include "core/analysis/reconstruction.h"
#include "core/analysis/series.h"
#include "core/analysis/stackfeatures.h"
#include "core/backgroundrelease.h"
#include "core/pageprefaulter.h"

#include <algorithm>

namespace oomlens {

namespace {

void findPeak(const Snapshot& snapshot, DeviceAnalysis& d)
{
    d.peakAllocatedBytes = d.initialAllocatedBytes;
    d.peakEvent = -1;
    for (size_t i = 0; i < d.allocatedAfter.size(); ++i) {
        if (d.allocatedAfter[i] > d.peakAllocatedBytes) {
            d.peakAllocatedBytes = d.allocatedAfter[i];
            d.peakEvent = static_cast<int64_t>(i);
        }
    }
    const DeviceTrace* trace = snapshot.trace(d.device);
    if (trace && !trace->events.empty())
        d.peakTimeUs = trace->events[static_cast<size_t>(std::max<int64_t>(d.peakEvent, 0))].timeUs;

    d.categoriesAtPeak = {};
    for (const Allocation& a : d.allocations) {
        if (a.liveAfter(d.peakEvent))
            d.categoriesAtPeak[static_cast<size_t>(a.category)] += a.requestedSize;
    }
    d.peakReservedBytes = d.initialReservedBytes;
    for (uint64_t r : d.reservedAfter)
        d.peakReservedBytes = std::max(d.peakReservedBytes, r);
}

void analyzeOoms(const Snapshot& snapshot, StackFeatures& features, DeviceAnalysis& d)
{
    const DeviceTrace* trace = snapshot.trace(d.device);
    if (!trace)
        return;
    // The oom event changes nothing: the state right before it is the state it failed in.
    std::vector<int64_t> before;
    for (size_t i = 0; i < trace->events.size(); ++i) {
        if (trace->events[i].action == TraceAction::Oom)
            before.push_back(static_cast<int64_t>(i) - 1);
    }
    if (before.empty())
        return;
    const std::vector<CategoryBytes> liveBefore = liveByCategoryAt(d, before);
    for (size_t k = 0; k < before.size(); ++k) {
        const size_t i = static_cast<size_t>(before[k] + 1);
        const TraceEvent& e = trace->events[i];
        OomAnalysis oom;
        oom.eventIndex = static_cast<int64_t>(i);
        oom.timeUs = e.timeUs;
        oom.stream = e.stream;
        oom.requestedBytes = e.size;
        oom.deviceFreeBytes = e.deviceFree();
        oom.stack = e.stack;
        oom.allocatedBytes = allocatedAt(d, before[k]);
        oom.reservedBytes = reservedAt(d, before[k]);
        oom.liveByCategory = liveBefore[k];
        const AllocatorState state = allocatorStateAt(snapshot, d, before[k]);
        const bool large = isLargePoolRequest(e.size);
        oom.largestFreeBlock = state.largestFreeBlock(e.stream, large);
        oom.freeInPoolBytes = state.freeBytes(e.stream, large);
        // The stack's own answer, unless the labels refined it: a forward pass that kept nothing
        // for a backward is an evaluation pass (phases.h), which no frame of a `with no_grad()` shows.
        const Phase own = features.phase(e.stack);
        const bool refined = own == Phase::Forward && d.eventPhase[i] == Phase::Eval;
        oom.phase = own != Phase::Unknown && !refined ? own : d.eventPhase[i];
        oom.step = d.eventStep[i];
        d.ooms.push_back(oom);
    }
}

// A big trace's per-event series (the reconstruction's and the phase labels') are written once,
// a quarter of a gigabyte for 10M events: their pages are faulted in on another thread while the
// reconstruction runs (core/pageprefaulter.h), the one it writes first left to it.
void prefaultPerEventSeries(const DeviceTrace* trace, DeviceAnalysis& d, std::unique_ptr<PagePrefaulter>& prefaulter)
{
    const size_t n = trace ? trace->events.size() : 0;
    if (n < 1'000'000)
        return;
    if (!prefaulter)
        prefaulter = std::make_unique<PagePrefaulter>();
    d.reservedAfter.reserve(n);
    d.allocatedAfter.reserve(n);
    d.eventStep.reserve(n);
    d.eventPhase.reserve(n);
    d.allocations.reserve(n / 2 + 16); // what reconstructTimeline reserves
    // In the order the reconstruction writes them, after the eventAllocation it starts with. An
    // allocation takes an alloc, a free_requested and a free_completed: a quarter of the events
    // is what nearly every trace fills, so little is faulted in for nothing.
    prefaulter->populate(d.allocatedAfter.data(), n * sizeof(d.allocatedAfter[0]));
    prefaulter->populate(d.reservedAfter.data(), n * sizeof(d.reservedAfter[0]));
    prefaulter->populate(d.allocations.data(), n / 4 * sizeof(Allocation));
    prefaulter->populate(d.eventStep.data(), n * sizeof(d.eventStep[0]));
    prefaulter->populate(d.eventPhase.data(), n * sizeof(d.eventPhase[0]));
}

int32_t choosePrimary(const Snapshot& snapshot, const AnalysisOptions& options)
{
    const auto present = snapshot.devices();
    if (options.device)
        return *options.device;
    for (const DeviceTrace& t : snapshot.traces) {
        for (const TraceEvent& e : t.events) {
            if (e.action == TraceAction::Oom)
                return t.device;
        }
    }
    int32_t best = present.empty() ? 0 : present.front();
    size_t most = 0;
    for (const DeviceTrace& t : snapshot.traces) {
        if (t.events.size() > most) {
            most = t.events.size();
            best = t.device;
        }
    }
    return best;
}

} // namespace

const DeviceAnalysis* SnapshotAnalysis::device(int32_t ordinal) const
{
    for (const DeviceAnalysis& d : devices) {
        if (d.device == ordinal)
            return &d;
    }
    return nullptr;
}

SnapshotAnalysis analyzeSnapshot(std::shared_ptr<const Snapshot> snapshot, const AnalysisOptions& options)
{
    SnapshotAnalysis result;
    result.snapshot = snapshot;
    if (!snapshot || !snapshot->frames || !snapshot->strings)
        return result;
    // The file's mapping and the decoder's tables go back before the analysis takes its memory.
    finishQueuedReleasesHere();

    // A copy per analysis: matching caches per frame of this snapshot.
    std::optional<CategoryRules> rules;
    if (options.rules)
        rules = *options.rules;
    result.rulesError = options.rulesError;

    StackFeatures features(*snapshot);
    auto devices = snapshot->devices();
    result.primaryDevice = choosePrimary(*snapshot, options);
    std::unique_ptr<PagePrefaulter> prefaulter;
    const SnapshotBackend framesBackend = snapshotBackendFromFrames(*snapshot);
    for (int32_t ordinal : devices) {
        if (options.cancelled())
            break;
        DeviceAnalysis d;
        prefaultPerEventSeries(snapshot->trace(ordinal), d, prefaulter);
        reconstructTimeline(*snapshot, ordinal, d);
        if (options.cancelled())
            break;
        labelPhases(*snapshot, features, d);
        buildPhaseRuns(d);
        categorize(*snapshot, features, rules ? &*rules : nullptr, d);
        if (options.cancelled())
            break;
        buildTimeCheckpoints(snapshot->trace(ordinal), d);
        findPeak(*snapshot, d);
        analyzeOoms(*snapshot, features, d);
        d.history = traceHistory(*snapshot, d, framesBackend);
        d.annotationSpans = annotationAndRecomputeSpans(*snapshot, d); // reads the time checkpoints
        result.devices.push_back(std::move(d));
    }
    return result;
}

} // namespace oomlens
