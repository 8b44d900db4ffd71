#include "core/analysis/phases.h"

#include <algorithm>
#include <string_view>

namespace oomlens {

namespace {

struct TimeWindow {
    int64_t start = 0;
    int64_t end = 0;
};

std::string_view annotationField(const Annotation& a, std::string_view key)
{
    for (const auto& [k, v] : a.fields) {
        if (k == key)
            return v;
    }
    return {};
}

bool annotationOnDevice(const Annotation& a, int32_t device)
{
    return a.device == device || a.device < 0;
}

std::vector<TimeWindow> optimizerWindows(const Snapshot& snapshot, int32_t device)
{
    std::vector<TimeWindow> windows;
    std::vector<int64_t> starts;
    for (const Annotation& a : snapshot.annotations) {
        if (!annotationOnDevice(a, device))
            continue;
        const auto name = annotationField(a, "name");
        if (name.substr(0, 10) != "Optimizer.")
            continue;
        const auto stage = annotationField(a, "stage");
        if (stage == "START") {
            starts.push_back(a.timeUs);
        } else if (stage == "END" && !starts.empty()) {
            windows.push_back({starts.back(), a.timeUs});
            starts.pop_back();
        }
    }
    return windows;
}

std::vector<int64_t> profilerStepStarts(const Snapshot& snapshot, int32_t device)
{
    std::vector<int64_t> starts;
    for (const Annotation& a : snapshot.annotations) {
        if (!annotationOnDevice(a, device))
            continue;
        if (annotationField(a, "name").substr(0, 13) == "ProfilerStep#" && annotationField(a, "stage") != "END")
            starts.push_back(a.timeUs);
    }
    std::sort(starts.begin(), starts.end());
    return starts;
}

// Raw evidence per event: a phase, or Unknown with a note whether the event had frames at all.
enum class Evidence : uint8_t { None, Loose, Known };

bool isTraining(Phase p)
{
    return p == Phase::Forward || p == Phase::Backward || p == Phase::Optimizer || p == Phase::Data
        || p == Phase::Eval;
}

void labelSteps(const Snapshot& snapshot, StackFeatures& features, const std::vector<TraceEvent>& events,
                DeviceAnalysis& out)
{
    const size_t n = events.size();
    out.eventStep.assign(n, -1);
    out.stepCount = 0;
    bool anyKnown = false, hasOptimizer = false, hasBackward = false;
    for (Phase p : out.eventPhase) {
        anyKnown |= p != Phase::Unknown;
        hasOptimizer |= p == Phase::Optimizer;
        hasBackward |= p == Phase::Backward;
    }
    if (!anyKnown)
        return;

    std::vector<char> boundary(n, 0);
    const auto profilerStarts = profilerStepStarts(snapshot, out.device);
    if (profilerStarts.size() >= 2) {
        size_t next = 0;
        for (size_t i = 0; i < n && next < profilerStarts.size(); ++i) {
            if (events[i].timeUs >= profilerStarts[next]) {
                boundary[i] = 1;
                while (next < profilerStarts.size() && profilerStarts[next] <= events[i].timeUs)
                    ++next;
            }
        }
    } else {
        Phase previous = Phase::Unknown; // last training phase; Unknown = program start or after load
        FrameId lastTop;
        for (size_t i = 0; i < n; ++i) {
            const Phase p = out.eventPhase[i];
            if (p == Phase::Load) {
                previous = Phase::Unknown;
                continue;
            }
            if (!isTraining(p))
                continue;
            bool starts = false;
            if (hasOptimizer || hasBackward) {
                const bool entering = p == Phase::Forward || p == Phase::Data;
                const bool fromEnd = previous == Phase::Unknown || previous == Phase::Optimizer
                    || (!hasOptimizer && previous == Phase::Backward);
                starts = entering && fromEnd;
            } else {
                const bool forwardLike = p == Phase::Forward || p == Phase::Eval;
                starts = forwardLike && previous != Phase::Forward && previous != Phase::Eval;
                // Inside a run of forward passes, a pass starts over when the model's top-level
                // forward goes back to an earlier line of the same file.
                const FrameId top = features.topForwardFrame(events[i].stack);
                if (forwardLike && top.isValid() && events[i].action == TraceAction::Alloc) {
                    if (lastTop.isValid() && !starts) {
                        const Frame& a = snapshot.frames->frame(lastTop);
                        const Frame& b = snapshot.frames->frame(top);
                        starts = a.filename == b.filename && b.line < a.line;
                    }
                    lastTop = top;
                }
            }
            boundary[i] = starts ? 1 : 0;
            previous = p;
        }
    }

    int32_t step = 0;
    for (size_t i = 0; i < n; ++i) {
        if (boundary[i]) {
            ++step;
            ++out.stepCount;
        }
        out.eventStep[i] = step;
    }
}

void buildSpans(DeviceAnalysis& out)
{
    out.phaseSpans.clear();
    for (size_t i = 0; i < out.eventPhase.size(); ++i) {
        const auto index = static_cast<int64_t>(i);
        if (!out.phaseSpans.empty() && out.phaseSpans.back().phase == out.eventPhase[i]
            && out.phaseSpans.back().step == out.eventStep[i]) {
            out.phaseSpans.back().lastEvent = index;
            continue;
        }
        out.phaseSpans.push_back({index, index, out.eventPhase[i], out.eventStep[i]});
    }
}

} // namespace

void labelPhases(const Snapshot& snapshot, StackFeatures& features, DeviceAnalysis& out)
{
    static const std::vector<TraceEvent> none;
    const DeviceTrace* trace = snapshot.trace(out.device);
    const std::vector<TraceEvent>& events = trace ? trace->events : none;
    const size_t n = events.size();

    out.eventPhase.assign(n, Phase::Unknown);
    std::vector<Evidence> evidence(n, Evidence::None);
    const auto windows = optimizerWindows(snapshot, out.device);

    for (size_t i = 0; i < n; ++i) {
        const TraceEvent& e = events[i];
        StackId stack = e.stack;
        // Without context='all', a free carries its block's allocation stack: it says where the
        // memory came from, not where the free happened.
        if ((e.action == TraceAction::FreeRequested || e.action == TraceAction::FreeCompleted
             || e.action == TraceAction::Free)
            && out.eventAllocation[i] >= 0) {
            const Allocation& a = out.allocations[static_cast<size_t>(out.eventAllocation[i])];
            if (a.allocEvent >= 0 && a.stack == stack)
                stack = FrameTable::emptyStack();
        }
        Phase p = stack == FrameTable::emptyStack() ? Phase::Unknown : features.phase(stack);
        if (p == Phase::Unknown && e.timeUs != 0) {
            for (const TimeWindow& w : windows) {
                if (e.timeUs >= w.start && e.timeUs <= w.end) {
                    p = Phase::Optimizer;
                    break;
                }
            }
        }
        out.eventPhase[i] = p;
        evidence[i] = p != Phase::Unknown ? Evidence::Known
                                          : (stack == FrameTable::emptyStack() ? Evidence::None : Evidence::Loose);
    }

    Phase current = Phase::Unknown;
    size_t firstKnown = n;
    for (size_t i = 0; i < n; ++i) {
        if (evidence[i] == Evidence::Known) {
            current = out.eventPhase[i];
            firstKnown = std::min(firstKnown, i);
        } else if (evidence[i] == Evidence::Loose) {
            // Training-loop code outside any module: the loss right after a forward, otherwise
            // preparing the next batch.
            if (current != Phase::Forward && current != Phase::Eval && current != Phase::Unknown)
                current = Phase::Data;
            out.eventPhase[i] = current;
        } else {
            out.eventPhase[i] = current;
        }
    }
    // Events before the first evidence belong to whatever phase the trace opened in.
    if (firstKnown < n) {
        for (size_t i = 0; i < firstKnown; ++i) {
            if (out.eventPhase[i] == Phase::Unknown)
                out.eventPhase[i] = out.eventPhase[firstKnown];
        }
    }

    labelSteps(snapshot, features, events, out);
    buildSpans(out);
}

} // namespace oomlens
