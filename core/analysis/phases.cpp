#include "core/analysis/phases.h"

#include "core/analysis/annotationspans.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

namespace oomlens {

namespace {

struct TimeWindow
{
    int64_t start = 0;
    int64_t end = 0;
};

// Optimizer.step annotations (record_function), merged and ordered so events find theirs by
// binary search.
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
            windows.push_back({ starts.back(), a.timeUs });
            starts.pop_back();
        }
    }
    std::sort(
        windows.begin(), windows.end(), [](const TimeWindow& a, const TimeWindow& b) { return a.start < b.start; });
    std::vector<TimeWindow> merged;
    for (const TimeWindow& w : windows) {
        if (!merged.empty() && w.start <= merged.back().end)
            merged.back().end = std::max(merged.back().end, w.end);
        else
            merged.push_back(w);
    }
    return merged;
}

// Finds the window holding a time. time_us mostly grows along the trace, so the search walks
// forward from the previous answer and only falls back to a binary search when time goes back.
class WindowCursor
{
public:
    explicit WindowCursor(const std::vector<TimeWindow>& windows)
        : m_windows(windows)
    { }

    // Index of the window holding timeUs, or -1.
    int64_t at(int64_t timeUs)
    {
        const auto n = m_windows.size();
        if (timeUs < m_lastTime) {
            auto it = std::upper_bound(
                m_windows.begin(), m_windows.end(), timeUs, [](int64_t t, const TimeWindow& w) { return t < w.start; });
            m_next = static_cast<size_t>(it - m_windows.begin());
        } else {
            while (m_next < n && m_windows[m_next].start <= timeUs)
                ++m_next;
        }
        m_lastTime = timeUs;
        // m_next is the first window starting after timeUs; the one before may hold it.
        if (m_next == 0 || timeUs > m_windows[m_next - 1].end)
            return -1;
        return static_cast<int64_t>(m_next - 1);
    }

private:
    const std::vector<TimeWindow>& m_windows;
    size_t m_next = 0;
    int64_t m_lastTime = INT64_MIN;
};

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
// Frameless is an allocation (or the OOM) that recorded no frames in a trace whose other
// allocations do: made on a thread without Python frames, which in training is the autograd
// engine's. A free without frames is None: with context='alloc' it only lacks its block's stack.
enum class Evidence : uint8_t { None, Frameless, Loose, Known };

bool isAllocation(TraceAction action)
{
    return action == TraceAction::Alloc || action == TraceAction::SegmentAlloc || action == TraceAction::Oom;
}

bool isTraining(Phase p)
{
    return p == Phase::Forward || p == Phase::Backward || p == Phase::Optimizer || p == Phase::Data || p == Phase::Eval;
}

// What the trace's labels hold, which decides how its steps are told apart.
struct PhasesPresent
{
    bool anyKnown = false;
    bool hasOptimizer = false;
    bool hasBackward = false;
};

PhasesPresent phasesPresent(const std::vector<Phase>& eventPhase)
{
    PhasesPresent present;
    for (Phase p : eventPhase) {
        present.anyKnown |= p != Phase::Unknown;
        present.hasOptimizer |= p == Phase::Optimizer;
        present.hasBackward |= p == Phase::Backward;
    }
    return present;
}

// A step starts at the first event at or after each ProfilerStep# annotation.
void profilerBoundaries(
    const std::vector<TraceEvent>& events, const std::vector<int64_t>& profilerStarts, std::vector<char>& boundary)
{
    size_t next = 0;
    for (size_t i = 0; i < events.size() && next < profilerStarts.size(); ++i) {
        if (events[i].timeUs >= profilerStarts[next]) {
            boundary[i] = 1;
            while (next < profilerStarts.size() && profilerStarts[next] <= events[i].timeUs)
                ++next;
        }
    }
}

// Reads the requests in order and says where a step starts from the phases alone.
class StepBoundaries
{
public:
    StepBoundaries(const Snapshot& snapshot, StackFeatures& features, const PhasesPresent& present)
        : m_snapshot(snapshot)
        , m_features(features)
        , m_present(present)
    { }

    // Whether request i, labelled p, starts a step; nullopt when it says nothing about steps.
    std::optional<bool> starts(const TraceEvent& event, Phase p)
    {
        if (p == Phase::Load) {
            m_previous = Phase::Unknown;
            return std::nullopt;
        }
        if (!isTraining(p))
            return std::nullopt;
        // zero_grad sits at either end of a step (before the forward in most loops and in
        // Lightning's closure, after the update in others): it neither ends nor starts one.
        if (p == Phase::Optimizer && (m_features.features(event.stack) & FeatureZeroGrad))
            return std::nullopt;
        const bool trains = m_present.hasOptimizer || m_present.hasBackward;
        // Evaluation between training steps (Trainer's evaluate every eval_steps) belongs to the
        // step it follows: the next training step still starts where its data or forward
        // follows the optimizer, whatever evaluation ran in between.
        if (p == Phase::Eval && trains)
            return std::nullopt;
        const bool starts = trains ? startsTrainingStep(p) : startsForwardPass(event, p);
        m_previous = p;
        return starts;
    }

private:
    bool startsTrainingStep(Phase p) const
    {
        const bool entering = p == Phase::Forward || p == Phase::Data;
        const bool fromEnd = m_previous == Phase::Unknown || m_previous == Phase::Optimizer
            || (!m_present.hasOptimizer && m_previous == Phase::Backward);
        return entering && fromEnd;
    }

    bool startsForwardPass(const TraceEvent& event, Phase p)
    {
        const bool forwardLike = p == Phase::Forward || p == Phase::Eval;
        bool starts = forwardLike && m_previous != Phase::Forward && m_previous != Phase::Eval;
        // Inside a run of forward passes, a pass starts over when the model's top-level
        // forward goes back to an earlier line of the same file.
        const FrameId top = m_features.topForwardFrame(event.stack);
        if (forwardLike && top.isValid() && event.action == TraceAction::Alloc) {
            if (m_lastTop.isValid() && !starts) {
                const Frame& a = m_snapshot.frames->frame(m_lastTop);
                const Frame& b = m_snapshot.frames->frame(top);
                starts = a.filename == b.filename && b.line < a.line;
            }
            m_lastTop = top;
        }
        return starts;
    }

    const Snapshot& m_snapshot;
    StackFeatures& m_features;
    const PhasesPresent m_present;
    Phase m_previous = Phase::Unknown; // last training phase; Unknown = program start or after load
    FrameId m_lastTop;
};

void phaseBoundaries(const Snapshot& snapshot, StackFeatures& features, const std::vector<TraceEvent>& events,
    const DeviceAnalysis& out, const PhasesPresent& present, std::vector<char>& boundary)
{
    StepBoundaries steps(snapshot, features, present);
    for (size_t i = 0; i < events.size(); ++i) {
        // Only a request says where the program is now. A free carries the frames of its
        // allocation (the forward's saved tensors freed during backward read as "forward"), and
        // segment events the frames of whatever first mapped them.
        if (events[i].action != TraceAction::Alloc && events[i].action != TraceAction::Oom)
            continue;
        if (const auto starts = steps.starts(events[i], out.eventPhase[i]))
            boundary[i] = *starts ? 1 : 0;
    }
}

void labelSteps(
    const Snapshot& snapshot, StackFeatures& features, const std::vector<TraceEvent>& events, DeviceAnalysis& out)
{
    const size_t n = events.size();
    out.eventStep.assign(n, -1);
    out.stepCount = 0;
    const PhasesPresent present = phasesPresent(out.eventPhase);
    if (!present.anyKnown)
        return;

    std::vector<char> boundary(n, 0);
    const auto profilerStarts = profilerStepStarts(snapshot, out.device);
    if (profilerStarts.size() >= 2)
        profilerBoundaries(events, profilerStarts, boundary);
    else
        phaseBoundaries(snapshot, features, events, out, present, boundary);

    int32_t step = 0;
    for (size_t i = 0; i < n; ++i) {
        if (boundary[i]) {
            ++step;
            ++out.stepCount;
        }
        out.eventStep[i] = step;
    }
}

// One call of the model: from the allocation where its top-level forward begins to the event
// before whatever follows it (the next call, a backward, the end of the trace).
struct ForwardPass
{
    size_t first = 0;
    size_t last = 0;
    Phase next = Phase::Unknown; // the phase that follows; Forward: another call; Unknown: the trace ends
};

// Forward passes among the events labelled Forward (the loose loop code after a call included:
// the loss, the list append, the next batch). A new pass starts where the model's top-level
// forward goes back to an earlier line of its file: the model was called again.
std::vector<ForwardPass> forwardPasses(
    const Snapshot& snapshot, StackFeatures& features, const std::vector<TraceEvent>& events, const DeviceAnalysis& out)
{
    std::vector<ForwardPass> passes;
    bool open = false;
    FrameId lastTop;
    for (size_t i = 0; i < events.size(); ++i) {
        if (events[i].action != TraceAction::Alloc && events[i].action != TraceAction::Oom)
            continue; // frees and segment events carry other events' frames
        const Phase p = out.eventPhase[i];
        if (p != Phase::Forward) {
            if (open && p != Phase::Unknown) {
                passes.back().next = p;
                open = false;
            }
            lastTop = FrameId {};
            continue;
        }
        const FrameId top = features.topForwardFrame(events[i].stack);
        if (!top.isValid()) {
            if (open)
                passes.back().last = i;
            continue;
        }
        bool starts = !open;
        if (open && lastTop.isValid()) {
            const Frame& a = snapshot.frames->frame(lastTop);
            const Frame& b = snapshot.frames->frame(top);
            starts = a.filename == b.filename && b.line < a.line;
            if (starts)
                passes.back().next = Phase::Forward;
        }
        if (starts) {
            passes.push_back({ i, i, Phase::Unknown });
            open = true;
        }
        passes.back().last = i;
        lastTop = top;
    }
    return passes;
}

// A forward pass that nothing differentiates is an evaluation pass, whatever the code is named
// (`with torch.no_grad():` leaves no frame on the stack). Two physical signs, both required:
//   - no backward follows it: the next thing the program does is call the model again, or
//     something else (for the pass the run failed in, see below);
//   - it did not keep its intermediates. With grad enabled every op whose backward needs its
//     inputs or outputs (linear, matmul, layer norm, softmax, activations) saves them until the
//     backward, so a training forward keeps most of the bytes it makes alive to its end; under
//     no_grad nothing is saved, each layer's tensors are freed as the next layer runs, and what
//     outlives the pass is its output (and whatever the loop keeps of it). Less than half of the
//     pass's bytes alive at its end is the second kind.
// A training forward followed by a second call before the backward (two inputs, a distillation
// student) keeps its activations, so it stays a forward; a teacher under no_grad does not.
void markEvaluationPasses(
    const Snapshot& snapshot, StackFeatures& features, const std::vector<TraceEvent>& events, DeviceAnalysis& out)
{
    if (!snapshot.frames)
        return;
    const std::vector<ForwardPass> passes = forwardPasses(snapshot, features, events, out);
    if (passes.empty())
        return;
    std::vector<uint64_t> made(passes.size(), 0);
    std::vector<uint64_t> kept(passes.size(), 0);
    for (const Allocation& allocation : out.allocations) {
        if (allocation.allocEvent < 0)
            continue;
        const auto at = static_cast<size_t>(allocation.allocEvent);
        auto it = std::upper_bound(
            passes.begin(), passes.end(), at, [](size_t event, const ForwardPass& p) { return event < p.first; });
        if (it == passes.begin())
            continue;
        const auto index = static_cast<size_t>(std::prev(it) - passes.begin());
        const ForwardPass& pass = passes[index];
        if (at > pass.last)
            continue;
        made[index] += allocation.requestedSize;
        if (allocation.liveAfter(static_cast<int64_t>(pass.last)))
            kept[index] += allocation.requestedSize;
    }
    bool previousEval = false;
    for (size_t k = 0; k < passes.size(); ++k) {
        const ForwardPass& pass = passes[k];
        // A pass the trace ends in (the run failed inside it) has not shown what follows it, and
        // half-way through a training forward much may already be freed (eager attention frees
        // two of its three score-sized tensors per layer): it is evaluation only as the next call
        // of a loop that was already evaluating, nothing differentiated in between.
        const bool unfinished = pass.next == Phase::Unknown;
        const bool continuesEval = k > 0 && previousEval && passes[k - 1].next == Phase::Forward;
        const bool eval
            = pass.next != Phase::Backward && made[k] > 0 && 2 * kept[k] < made[k] && (!unfinished || continuesEval);
        previousEval = eval;
        if (!eval)
            continue;
        for (size_t i = pass.first; i <= pass.last; ++i) {
            if (out.eventPhase[i] == Phase::Forward)
                out.eventPhase[i] = Phase::Eval;
        }
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
        out.phaseSpans.push_back({ index, index, out.eventPhase[i], out.eventStep[i] });
    }
}

// The stack an event's phase is read from; empty where its own frames say nothing about it.
StackId evidenceStack(const TraceEvent& e, size_t i, const DeviceAnalysis& out)
{
    // Without context='all', a free carries its block's allocation stack: it says where the
    // memory came from, not where the free happened.
    if ((e.action == TraceAction::FreeRequested || e.action == TraceAction::FreeCompleted
            || e.action == TraceAction::Free)
        && out.eventAllocation[i] >= 0) {
        const Allocation& a = out.allocations[static_cast<size_t>(out.eventAllocation[i])];
        if (a.allocEvent >= 0 && a.stack == e.stack)
            return FrameTable::emptyStack();
    }
    // A released segment says nothing about where the program is: the allocator records the
    // context of the request whose retry released it, or, without one (empty_cache, a
    // context that records only allocations), the context the segment was first mapped in,
    // possibly many steps ago (CUDACachingAllocator's release_block:
    // `context ? context : block->context_when_segment_allocated`). The first is the next
    // request's own frames, the second misleads: an evaluation that releases cached
    // segments of the training step would read as backward.
    if (e.action == TraceAction::SegmentFree || e.action == TraceAction::SegmentUnmap)
        return FrameTable::emptyStack();
    return e.stack;
}

// Each event's phase from its own frames, and what kind of evidence it had.
std::vector<Evidence> readFrameEvidence(
    StackFeatures& features, const std::vector<TraceEvent>& events, DeviceAnalysis& out)
{
    const size_t n = events.size();
    std::vector<Evidence> evidence(n, Evidence::None);
    // Frameless allocations only say "another thread" when the trace records Python frames at all
    // (stacks='python' or 'all'); with stacks recording off every event is frameless.
    const bool framesRecorded = std::any_of(events.begin(), events.end(),
        [](const TraceEvent& e) { return isAllocation(e.action) && e.stack != FrameTable::emptyStack(); });
    for (size_t i = 0; i < n; ++i) {
        const TraceEvent& e = events[i];
        const StackId stack = evidenceStack(e, i, out);
        const Phase p = stack == FrameTable::emptyStack() ? Phase::Unknown : features.phase(stack);
        out.eventPhase[i] = p;
        if (p != Phase::Unknown)
            evidence[i] = Evidence::Known;
        else if (stack != FrameTable::emptyStack())
            evidence[i] = Evidence::Loose;
        else if (framesRecorded && isAllocation(e.action))
            evidence[i] = Evidence::Frameless;
    }
    return evidence;
}

// An Optimizer.step window only says "optimizer" for frameless events when no forward or
// backward ran inside it: with a closure (Lightning, LBFGS) the whole step is in the window.
void readOptimizerWindows(const Snapshot& snapshot, const std::vector<TraceEvent>& events, DeviceAnalysis& out,
    std::vector<Evidence>& evidence)
{
    const auto windows = optimizerWindows(snapshot, out.device);
    if (windows.empty())
        return;
    const size_t n = events.size();
    std::vector<char> closure(windows.size(), 0);
    WindowCursor inWindow(windows);
    for (size_t i = 0; i < n; ++i) {
        const Phase p = out.eventPhase[i];
        if ((p == Phase::Forward || p == Phase::Backward) && events[i].timeUs != 0) {
            const int64_t w = inWindow.at(events[i].timeUs);
            if (w >= 0)
                closure[static_cast<size_t>(w)] = 1;
        }
    }
    WindowCursor frameless(windows);
    for (size_t i = 0; i < n; ++i) {
        if (out.eventPhase[i] != Phase::Unknown || events[i].timeUs == 0)
            continue;
        const int64_t w = frameless.at(events[i].timeUs);
        if (w >= 0 && !closure[static_cast<size_t>(w)]) {
            out.eventPhase[i] = Phase::Optimizer;
            evidence[i] = Evidence::Known;
        }
    }
}

// Events without a phase of their own continue the one before them.
void continuePhases(const std::vector<Evidence>& evidence, DeviceAnalysis& out)
{
    const size_t n = evidence.size();
    Phase current = Phase::Unknown;
    size_t firstKnown = n;
    for (size_t i = 0; i < n; ++i) {
        if (evidence[i] == Evidence::Known) {
            current = out.eventPhase[i];
            firstKnown = std::min(firstKnown, i);
        } else if (evidence[i] == Evidence::Loose) {
            // Training-loop code outside any module: the loss right after a forward, otherwise
            // preparing the next batch.
            // Within an RL iteration's stage the framework's own code is that stage's.
            if (current != Phase::Forward && current != Phase::Eval && current != Phase::Unknown
                && !isIterationPhase(current))
                current = Phase::Data;
            out.eventPhase[i] = current;
        } else {
            // Memory made with no frames right after a forward pass is the autograd engine's:
            // loss.backward() runs the graph on the engine's own thread, whose allocations
            // (gradients, backward scratch) carry no Python frames. The Python side of it
            // (Tensor.backward) may show on a few of them, or on the OOM only, or nowhere.
            if (evidence[i] == Evidence::Frameless && current == Phase::Forward)
                current = Phase::Backward;
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
}

} // namespace

void labelPhases(const Snapshot& snapshot, StackFeatures& features, DeviceAnalysis& out)
{
    static const std::vector<TraceEvent> none;
    const DeviceTrace* trace = snapshot.trace(out.device);
    const std::vector<TraceEvent>& events = trace ? trace->events : none;

    out.eventPhase.assign(events.size(), Phase::Unknown);
    std::vector<Evidence> evidence = readFrameEvidence(features, events, out);
    readOptimizerWindows(snapshot, events, out, evidence);
    continuePhases(evidence, out);
    markEvaluationPasses(snapshot, features, events, out);
    labelSteps(snapshot, features, events, out);
    buildSpans(out);
}

} // namespace oomlens
