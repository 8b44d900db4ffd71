#pragma once

#include "core/analysis/tracehistory.h"

#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// The words for a device's trace history (core/analysis/tracehistory.h): its JSON value, what it
// means for the reader and how to record more.

// The JSON value of `coverage`: "complete", "late_start", "wrapped", "segments_only".
std::string_view coverageName(TraceHistory::Coverage coverage);

// What the history means for the reader, in plain sentences: the counts and what they cost (no
// stacks for the ghosts' allocations, the timeline's floor is memory of unknown age), or for a
// segments-only snapshot what is there and what is missing. Empty for a complete trace.
std::vector<std::string> historyStatement(const Snapshot& snapshot, const TraceHistory& history);

// How to record more: a longer ring buffer, recording from the start, no clear_history in between;
// or, for a segments-only snapshot, how to record a history at all. Empty for a complete trace.
std::string historyAdvice(const TraceHistory& history);

// The lines to run, for a code block under the advice.
std::string historyRecordingSnippet(SnapshotBackend backend = SnapshotBackend::Cuda);

} // namespace oomlens
