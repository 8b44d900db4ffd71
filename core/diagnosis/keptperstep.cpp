#include "core/diagnosis/keptperstep.h"

#include "core/analysis/userframe.h"

#include <algorithm>
#include <map>
#include <vector>

namespace oomlens {

namespace {

bool isTrainingState(Category category)
{
    return category == Category::Parameters || category == Category::Gradients || category == Category::OptimizerState;
}

struct Group
{
    int live = 0;
    int olderThanStep = 0;
    int olderThanTrace = 0;
    int evicted = 0;
    std::map<int32_t, int> madePerStep; // in-trace, by step
    int64_t latestEvent = -1;
    Phase phase = Phase::Unknown; // of the first member: one stack, one phase
    Category category = Category::Unknown;
};

// Whether the trace holds a whole training step before the failing one: only then could it have
// shown a kept reference being taken.
bool traceHoldsAStepBefore(const DeviceProfile& profile, int32_t failingStep)
{
    return std::any_of(profile.steps.begin(), profile.steps.end(),
        [&](const StepProfile& step) { return step.step >= 1 && step.step < failingStep && step.complete; });
}

// The innermost Python frame of the stack is the program's own code, not an installed framework's
// (DeepSpeed's engine moving the weights, a library's buffers): a kept reference is the loop's.
bool madeInProgramCode(const Snapshot& snapshot, StackId stack)
{
    for (FrameId id : snapshot.frames->stack(stack)) {
        const std::string_view file = snapshot.strings->get(snapshot.frames->frame(id).filename);
        if (isPythonFile(file))
            return !isInstalledPackageFile(file) && !isPyTorchFile(file);
    }
    return false;
}

// Loop code's own tensors: no module, optimizer, backward, loading, evaluation or engine frame
// decided their phase (Data is the loop's code between steps), and nothing categorised them as
// state, a collective's buffer or a cache.
bool madeByTheLoop(const Group& group)
{
    const bool loopPhase = group.phase == Phase::Unknown || group.phase == Phase::Data;
    const bool dynamic = group.category == Category::Unknown || group.category == Category::Activations
        || group.category == Category::Temporaries || group.category == Category::Inputs;
    return loopPhase && dynamic;
}

// Same-size blocks from one stack: the tensors one line makes each step.
using GroupKey = std::pair<uint32_t, uint64_t>; // stack, requested size

bool hasFrames(const Snapshot& snapshot, StackId stack)
{
    return stack.isValid() && stack != FrameTable::emptyStack() && stack.value < snapshot.frames->stackCount()
        && !snapshot.frames->stack(stack).empty();
}

// The tensors that outlived their step, grouped by stack and size: those still live, and those freed
// after their step ended (a cache evicting, a buffer reused) counted as evicted.
std::map<GroupKey, Group> groupSurvivors(
    const Snapshot& snapshot, const DeviceAnalysis& device, const StepProfile* failing, int64_t untilEvent)
{
    // Older-than-trace tensors were made before the failing step only when the trace holds its start.
    const bool traceHoldsStepStart = failing && failing->firstEvent > 0;
    std::map<GroupKey, Group> groups;
    for (const Allocation& allocation : device.allocations) {
        if (isTrainingState(allocation.category) || allocation.phase == Phase::Eval || allocation.phase == Phase::Load)
            continue;
        const StackId stack = allocation.stack;
        if (!hasFrames(snapshot, stack))
            continue;
        const bool madeBeforeStep = allocation.olderThanTrace()
            ? traceHoldsStepStart
            : allocation.step >= 0 && failing && allocation.allocEvent < failing->firstEvent;
        // A block the program freed that waits for another stream's work (free_requested, not yet
        // free_completed) is no longer held by the program: pending_frees', not a kept reference.
        if (allocation.releasedBy(untilEvent) && allocation.liveAfter(untilEvent))
            continue;
        const bool live = allocation.liveAfter(untilEvent);
        const bool freed = allocation.freeEvent >= 0 && allocation.freeEvent <= untilEvent;
        // A survivor freed later: outlived its step, then released (a cache evicting, a buffer reused).
        const bool outlivedStep = allocation.olderThanTrace()
            || (allocation.freeEvent >= 0 && allocation.step >= 0
                && device.eventStep[static_cast<size_t>(allocation.freeEvent)] > allocation.step);
        if (!live && !(freed && outlivedStep))
            continue;
        const auto [it, inserted] = groups.try_emplace({ stack.value, allocation.requestedSize });
        Group& group = it->second;
        if (inserted) {
            group.phase = allocation.phase;
            group.category = allocation.category;
        }
        if (!live) {
            ++group.evicted;
            continue;
        }
        ++group.live;
        group.olderThanStep += madeBeforeStep ? 1 : 0;
        group.olderThanTrace += allocation.olderThanTrace() ? 1 : 0;
        if (!allocation.olderThanTrace() && allocation.step >= 0) {
            ++group.madePerStep[allocation.step];
            group.latestEvent = std::max(group.latestEvent, allocation.allocEvent);
        }
    }
    return groups;
}

// A group is a set kept per step when three or more are live, some older than the failing step,
// none evicted, and either the trace shows steps adding it or, unseen, the live set alone argues it.
std::optional<KeptPerStep> keptSetPerStep(const Snapshot& snapshot, const GroupKey& key, const Group& group,
    bool rateVisible, std::optional<uint64_t> shortfallBytes)
{
    if (group.live < 3 || group.olderThanStep == 0 || group.evicted > 0)
        return std::nullopt;
    KeptPerStep found;
    found.stack = StackId(key.first);
    found.tensorBytes = key.second;
    found.live = group.live;
    found.olderThanStep = group.olderThanStep;
    if (group.madePerStep.empty()) {
        // Nothing of it in the trace: read from the live set alone, where the trace could not
        // have shown a step adding (see keptperstep.h).
        if (!shortfallBytes || rateVisible || group.olderThanTrace != group.live || !madeByTheLoop(group)
            || !madeInProgramCode(snapshot, found.stack) || found.liveBytes() < *shortfallBytes)
            return std::nullopt;
        found.perStep = 1;
        found.rateUnseen = true;
        return found;
    }
    // One set per step: the survivors outnumber what one step makes, or the trace shows a
    // second step adding to them.
    std::vector<int> counts;
    for (const auto& [step, count] : group.madePerStep)
        counts.push_back(count);
    std::sort(counts.begin(), counts.end());
    const int perStep = counts[counts.size() / 2];
    if (group.olderThanStep < 2 * perStep && group.madePerStep.size() < 2)
        return std::nullopt;
    found.perStep = perStep;
    found.latestEvent = group.latestEvent;
    return found;
}

} // namespace

std::optional<KeptPerStep> findKeptPerStep(const Snapshot& snapshot, const DeviceAnalysis& device,
    const DeviceProfile& profile, int64_t untilEvent, std::optional<uint64_t> shortfallBytes)
{
    if (untilEvent < 0 || untilEvent >= static_cast<int64_t>(device.eventStep.size()) || !snapshot.frames)
        return std::nullopt;
    const int32_t failingStep = device.eventStep[static_cast<size_t>(untilEvent)];
    const std::map<GroupKey, Group> groups = groupSurvivors(snapshot, device, profile.step(failingStep), untilEvent);
    const bool rateVisible = traceHoldsAStepBefore(profile, failingStep);
    std::optional<KeptPerStep> best;
    for (const auto& [key, group] : groups) {
        const std::optional<KeptPerStep> found = keptSetPerStep(snapshot, key, group, rateVisible, shortfallBytes);
        if (found && (!best || found->liveBytes() > best->liveBytes()))
            best = found;
    }
    if (best)
        best->where = userFrameLabel(snapshot, best->stack);
    return best;
}

} // namespace oomlens
