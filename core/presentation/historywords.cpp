#include "core/presentation/historywords.h"

#include "core/units.h"

#include <algorithm>

namespace oomlens {

namespace {

std::string count(size_t n, const char* one, const char* many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What kind of file lacks the history, so the reader knows which switch was off.
std::string segmentsOnlySource(const Snapshot& snapshot, const TraceHistory& history)
{
    if (snapshot.era == Snapshot::Era::SegmentList)
        return "This snapshot is a bare list of segments (torch.cuda.memory_snapshot(), or a PyTorch 1.13 or older "
               "dump)";
    const std::string which = snapshot.era == Snapshot::Era::BlockHistory
        ? "This snapshot (PyTorch 2.0, blocks with their own history)"
        : "This snapshot";
    if (history.traceEvents > 0)
        return which + "'s trace holds only " + count(history.traceEvents, "entry", "entries")
            + ", none of them an allocation";
    if (snapshot.era == Snapshot::Era::BlockHistory)
        return which + " has no device trace";
    return "This snapshot was dumped without trace entries (history recorded with enabled='state', or traces "
           "left out of the dump)";
}

} // namespace

std::string_view coverageName(TraceHistory::Coverage coverage)
{
    switch (coverage) {
    case TraceHistory::Coverage::Complete:
        return "complete";
    case TraceHistory::Coverage::LateStart:
        return "late_start";
    case TraceHistory::Coverage::Wrapped:
        return "wrapped";
    case TraceHistory::Coverage::SegmentsOnly:
        return "segments_only";
    }
    return "complete";
}

std::vector<std::string> historyStatement(const Snapshot& snapshot, const TraceHistory& history)
{
    std::vector<std::string> lines;
    if (history.segmentsOnly()) {
        lines.push_back(segmentsOnlySource(snapshot, history) + ": it holds the allocator's state at the dump only — "
            + count(history.segments, "segment", "segments") + ", " + formatBytes(history.reservedBytes) + " reserved, "
            + formatBytes(history.liveBlockBytes) + " in " + count(history.liveBlocks, "live block", "live blocks")
            + ".");
        lines.push_back(
            "Missing without a trace: the timeline, the peak over time, phases and steps, the OOM event and "
            "the allocator state at the failure; the map of segments and blocks shows the moment of the "
            "dump.");
        lines.push_back(history.blocksHaveStacks
                ? "The blocks' stacks still tell the categories of what was live at the dump."
                : "The blocks carry no stacks, so what they hold cannot be put in categories (all unknown).");
        return lines;
    }
    if (!history.truncated())
        return lines;
    if (history.ghostFrees > 0)
        lines.push_back("The trace does not reach back to the start: " + count(history.ghostFrees, "free", "frees")
            + " (" + formatBytes(history.ghostFreeBytes) + (history.ghostFrees == 1 ? ") has" : ") have")
            + " no matching allocation in it (\"ghost\" frees): the ring buffer had already overwritten their "
              "allocations, or the history was cleared. Their allocation's moment, stack and category are unknown.");
    if (history.olderLiveBlocks > 0)
        lines.push_back(count(history.olderLiveBlocks, "block", "blocks") + " (" + formatBytes(history.olderLiveBytes)
            + (history.olderLiveBlocks == 1 ? ") live at the dump was" : ") live at the dump were")
            + " allocated before the trace began and never touched by it; the stacks come from the dump, the moment "
              "of allocation is unknown.");
    lines.push_back("Memory older than the trace: " + count(history.olderBlocks(), "allocation", "allocations") + ", "
        + formatBytes(history.olderBytes())
        + " — the timeline starts with it already live, as a floor of unknown age, over "
        + count(history.traceEvents, "trace entry", "trace entries") + ".");
    return lines;
}

std::string historyAdvice(const TraceHistory& history)
{
    const std::string module(snapshotMemoryModule(history.backend));
    switch (history.coverage) {
    case TraceHistory::Coverage::Complete:
        return {};
    case TraceHistory::Coverage::SegmentsOnly:
        return "To get a timeline, record the allocator's history from the start of the run with " + module
            + "._record_memory_history(max_entries=100000)"
            + (history.backend == SnapshotBackend::Cuda ? " (PyTorch 2.1 or newer)" : "") + " and dump it with "
            + module + "._dump_snapshot() after the failure — or let oomlens_capture do both.";
    case TraceHistory::Coverage::Wrapped:
        return "To record more, raise max_entries: " + module
            + "._record_memory_history(max_entries=" + std::to_string(std::max<size_t>(100000, history.traceEvents * 4))
            + ") keeps a longer ring buffer (this trace kept " + std::to_string(history.traceEvents)
            + " entries; the file grows by a few hundred bytes per entry). Start recording before the model is "
              "built, and do not restart it with clear_history=True in between: both cut the beginning.";
    case TraceHistory::Coverage::LateStart:
        break;
    }
    return "To see where the older memory came from, call " + module
        + "._record_memory_history(max_entries=100000) before the model and the optimizer are created; recording "
          "that starts late, or restarts with clear_history=True, cuts the beginning.";
}

std::string historyRecordingSnippet(SnapshotBackend backend)
{
    const std::string module(snapshotMemoryModule(backend));
    return module + "._record_memory_history(max_entries=100000)  # first thing, before the model is built\n"
        + "# ... the run, until it fails ...\n" + module + "._dump_snapshot(\"snapshot.pickle\")";
}

} // namespace oomlens
