#include "core/analysis/stackfeatures.h"

#include "core/analysis/framewords.h"
#include "core/analysis/phaseranking.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace oomlens {

StackFeatures::StackFeatures(const Snapshot& snapshot)
    : m_snapshot(snapshot)
{
    if (snapshot.frames) {
        m_stacks.resize(snapshot.frames->stackCount());
        m_frames.resize(snapshot.frames->frameCount(), 0);
        m_frameEngine.resize(snapshot.frames->frameCount(), Engine::None);
    }
}

uint32_t StackFeatures::frameFeatures(FrameId id)
{
    uint32_t& cached = m_frames[id.value];
    if (cached & computedBit)
        return cached & ~computedBit;

    const Frame& frame = m_snapshot.frames->frame(id);
    const std::string_view name = m_snapshot.strings->get(frame.name);
    const std::string_view file = m_snapshot.strings->get(frame.filename);
    const uint32_t words = frameWords(file, name);
    if (words & WordForwardName)
        cached |= forwardNameBit;
    // Loading read from the frame's own words; a constructor, a `with torch.device(...)` block or an
    // engine's start-up count as loading only where nothing else in the stack decides.
    if (words & WordLoad)
        cached |= loadWordBit;
    uint32_t f = 0;
    // The vocabulary's words as the stack's features; one word may count for two.
    constexpr std::pair<uint32_t, uint32_t> featureOfWord[] = {
        { WordBackward, FeatureBackward },
        { WordAccumulateGrad, FeatureAccumulateGrad },
        { WordOptimizer, FeatureOptimizer },
        { WordOptimizerStateInit, FeatureOptimizerInit },
        { WordOptimizerSetup, FeatureOptimizerSetup },
        { WordOptimizerStepMath, FeatureOptimizerStepMath },
        { WordZeroGrad, FeatureZeroGrad },
        { WordModuleCall, FeatureForward },
        { WordForwardName, FeatureForward },
        { WordGradModeDecorator, FeatureGradModeDecorator },
        { WordNoGradName, FeatureNoGrad },
        { WordEvaluation, FeatureEvalName },
        { WordEvalLoop, FeatureEvalLoop },
        // Building a module allocates its weights; a forward that constructs something is still the
        // forward: a constructor (or a `with torch.device` block) is loading only where nothing else
        // decides (loadWordBit tells the loading words apart for rankPhase).
        { WordLoad, FeatureLoad },
        { WordConstructor, FeatureLoad },
        { WordDeviceContext, FeatureLoad },
        { WordData, FeatureData },
        { WordTensorToDevice, FeatureTensorTo },
    };
    for (const auto& [word, feature] : featureOfWord) {
        if (words & word)
            f |= feature;
    }

    const EngineFrame engine = engineFrame(name, file);
    f |= engine.features;
    m_frameEngine[id.value] = engine.engine;

    cached |= f | computedBit;
    return f;
}

namespace {

constexpr uint32_t optimizerFeatures = FeatureOptimizer | FeatureZeroGrad | FeatureOptimizerInit;

// Reads a stack's frames, innermost first, into the clues rankPhase decides from.
struct StackClues
{
    PhaseClues clues;
    size_t evalName = PhaseClues::absent; // a framework's evaluation entry point or the user's function named for it
    size_t evalLoop = PhaseClues::absent;
    size_t noGradName = PhaseClues::absent; // a frame named for no_grad / inference_mode
    // The outermost frame that switches grad mode (a @no_grad/@inference_mode decorator, a frame
    // named for them): it governs the forward only when it encloses one.
    size_t gradModeOutermost = PhaseClues::absent;
    uint32_t iteration = 0; // the innermost RL stage marker

    void see(size_t index, uint32_t f, bool loadWord)
    {
        if (f & (FeatureNoGrad | FeatureGradModeDecorator))
            gradModeOutermost = index;
        if (!iteration && (f & iterationFeatures))
            iteration = f & iterationFeatures;
        auto mark = [&](size_t& slot, bool present) {
            if (present && slot == PhaseClues::absent)
                slot = index;
        };
        mark(clues.optimizer, f & optimizerFeatures);
        mark(clues.backward, f & FeatureBackward);
        mark(clues.forward, f & FeatureForward);
        mark(clues.load, loadWord);
        mark(clues.data, f & FeatureData);
        mark(clues.weakLoad, (f & FeatureLoad) && !loadWord);
        mark(clues.weakData, f & FeatureTensorTo);
        mark(clues.optimizerSetup, f & FeatureOptimizerSetup);
        mark(evalName, f & FeatureEvalName);
        mark(evalLoop, f & FeatureEvalLoop);
        mark(noGradName, f & FeatureNoGrad);
    }

    // What puts the stack's work under evaluation: a framework's evaluation loop or an evaluation
    // name anywhere; a grad-mode frame that encloses the forward. Inside optimizer.step(closure)
    // the optimizer's own @no_grad and the closure's @enable_grad both show as decorate_context, so
    // there only a frame named for no_grad counts (rankPhase keeps those inside the step).
    // A grad-mode frame inside the innermost module call is a hook's or a helper's own no_grad,
    // not the forward's: DeepSpeed ZeRO-3 gathers each submodule's parameters from a forward
    // pre-hook under @torch.no_grad() (parameter_offload.py's pre_sub_module_forward_function,
    // the coordinator's fetch_sub_module) while the training forward around it records its graph.
    size_t evaluation() const
    {
        size_t at = std::min(evalName, evalLoop);
        if (clues.optimizer != PhaseClues::absent)
            return std::min(at, noGradName);
        const bool gradModeEnclosesForward = gradModeOutermost != PhaseClues::absent
            && clues.forward != PhaseClues::absent && gradModeOutermost > clues.forward;
        return gradModeEnclosesForward ? std::min(at, gradModeOutermost) : at;
    }
};

Phase iterationPhase(uint32_t marker)
{
    if (marker & FeatureWake)
        return Phase::Wake;
    if (marker & FeatureSleep)
        return Phase::Sleep;
    if (marker & FeatureReload)
        return Phase::Reload;
    if (marker & FeatureOffload)
        return Phase::Offload;
    if (marker & FeatureWeightSync)
        return Phase::WeightSync;
    if (marker & FeatureReference)
        return Phase::Reference;
    if (marker & FeatureReward)
        return Phase::Reward;
    return Phase::Rollout;
}

// An RL iteration's stage: the innermost marker (a wake-up inside the weight sync is the wake-up);
// the policy's own update has none and stays forward/backward/optimizer. An inference engine's code
// outside any marked stage: its start-up (weights, KV cache) is loading, everything else it runs is
// generation.
std::optional<Phase> stageOf(uint32_t f, uint32_t iteration)
{
    if (iteration)
        return iterationPhase(iteration);
    if (f & FeatureEngine)
        return (f & (FeatureLoad | FeatureKvCache)) ? Phase::Load : Phase::Rollout;
    return std::nullopt;
}

} // namespace

const StackFeatures::Entry& StackFeatures::entry(StackId stack)
{
    static const Entry empty;
    if (!stack.isValid() || stack.value >= m_stacks.size())
        return empty;
    Entry& e = m_stacks[stack.value];
    if (e.computed)
        return e;
    e.computed = true;
    StackClues read;
    size_t index = 0;
    for (FrameId frame : m_snapshot.frames->stack(stack)) {
        const uint32_t f = frameFeatures(frame);
        e.features |= f;
        read.see(index++, f, (m_frames[frame.value] & loadWordBit) != 0);
        if (m_frames[frame.value] & forwardNameBit)
            e.topForward = frame; // innermost first: the last one seen is the outermost
        if (e.engine == Engine::None)
            e.engine = m_frameEngine[frame.value];
    }
    PhaseClues clues = read.clues;
    clues.evaluation = read.evaluation();
    clues.stage = stageOf(e.features, read.iteration);
    e.phase = rankPhase(clues).phase;
    return e;
}

uint32_t StackFeatures::features(StackId stack)
{
    return entry(stack).features;
}

FrameId StackFeatures::topForwardFrame(StackId stack)
{
    return entry(stack).topForward;
}

Engine StackFeatures::engine(StackId stack)
{
    return entry(stack).engine;
}

Phase StackFeatures::phase(StackId stack)
{
    return entry(stack).phase;
}

} // namespace oomlens
