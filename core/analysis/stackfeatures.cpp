#include "core/analysis/stackfeatures.h"

#include "core/analysis/framewords.h"

#include <algorithm>
#include <cstdint>
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
        // forward, which decidePhase reads first.
        { WordLoad, FeatureLoad },
        { WordConstructor, FeatureLoad },
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

// Where the decisive frames sit, innermost first; npos where absent.
struct FramePositions
{
    static constexpr size_t npos = SIZE_MAX;
    size_t optimizer = npos;
    size_t backward = npos;
    size_t forward = npos;
    size_t evalEvidence = npos; // an eval-like name or an explicit no_grad/inference_mode frame
    // The outermost frame that switches grad mode (a @no_grad/@inference_mode decorator, a frame
    // named for them): it governs the forward only when it encloses one.
    size_t gradModeOutermost = npos;
    uint32_t iteration = 0; // the innermost RL stage marker
    void see(size_t index, uint32_t f)
    {
        if (f & (FeatureNoGrad | FeatureGradModeDecorator))
            gradModeOutermost = index;
        if (!iteration && (f & iterationFeatures))
            iteration = f & iterationFeatures;
        auto mark = [&](size_t& slot, bool present) {
            if (present && slot == npos)
                slot = index;
        };
        mark(optimizer, f & optimizerFeatures);
        mark(backward, f & FeatureBackward);
        mark(forward, f & FeatureForward);
        mark(evalEvidence, f & (FeatureNoGrad | FeatureEvalName));
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

Phase decidePhase(uint32_t f, const FramePositions& at)
{
    // The optimizer step a framework takes while it is being built creates state, trains nothing:
    // what it allocates belongs with the weights' loading, and no training step starts there.
    if (f & FeatureOptimizerSetup)
        return Phase::Load;
    // An optimizer frame inside which no module ran and no backward ran: the step's own work.
    if (at.optimizer < at.forward && at.optimizer < at.backward)
        return Phase::Optimizer;
    // Backward next: activation checkpointing re-runs forward inside backward, and the engine
    // thread's stacks carry no Python frames at all.
    if (f & FeatureBackward)
        return Phase::Backward;
    // An RL iteration's stage: the innermost marker (a wake-up inside the weight sync is the wake-up);
    // the policy's own update has none and stays forward/backward/optimizer.
    if (at.iteration)
        return iterationPhase(at.iteration);
    // An inference engine's code outside any marked stage: its start-up (weights, KV cache) is
    // loading, everything else it runs is generation.
    if (f & FeatureEngine)
        return (f & (FeatureLoad | FeatureKvCache)) ? Phase::Load : Phase::Rollout;
    // Inside a framework's evaluation loop nothing is differentiated: the model's forward and the
    // loop's own gathering of its outputs alike.
    if (f & FeatureEvalLoop)
        return Phase::Eval;
    if (f & FeatureForward) {
        // A forward inside optimizer.step() is a closure's, which runs with grad enabled: the
        // optimizer's own @no_grad and the closure's @enable_grad both show as decorate_context,
        // and eval-like names outside the step say nothing about the closure.
        // A grad-mode frame inside the innermost module call is a hook's or a helper's own no_grad,
        // not the forward's: DeepSpeed ZeRO-3 gathers each submodule's parameters from a forward
        // pre-hook under @torch.no_grad() (parameter_offload.py's pre_sub_module_forward_function,
        // the coordinator's fetch_sub_module) while the training forward around it records its graph.
        const bool inOptimizer = at.optimizer != FramePositions::npos;
        const bool gradModeEnclosesForward
            = at.gradModeOutermost != FramePositions::npos && at.gradModeOutermost > at.forward;
        const bool eval
            = inOptimizer ? at.evalEvidence < at.optimizer : (f & FeatureEvalName) != 0 || gradModeEnclosesForward;
        return eval ? Phase::Eval : Phase::Forward;
    }
    if (f & FeatureLoad)
        return Phase::Load;
    if (f & (FeatureData | FeatureTensorTo))
        return Phase::Data;
    return Phase::Unknown;
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
    FramePositions at;
    size_t index = 0;
    for (FrameId frame : m_snapshot.frames->stack(stack)) {
        const uint32_t f = frameFeatures(frame);
        e.features |= f;
        at.see(index++, f);
        if (m_frames[frame.value] & forwardNameBit)
            e.topForward = frame; // innermost first: the last one seen is the outermost
        if (e.engine == Engine::None)
            e.engine = m_frameEngine[frame.value];
    }
    e.phase = decidePhase(e.features, at);
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
