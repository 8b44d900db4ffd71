#pragma once

#include "core/analysis/enginemarkers.h"
#include "core/phase.h"
#include "core/snapshot.h"

#include <cstdint>
#include <vector>

namespace oomlens {

// What a call stack tells about the program's activity, computed once per distinct stack.
// Frames may be Python only, or C++ innermost with Python outermost (stacks='all'); the
// markers below are matched wherever they sit, so either order works.
enum StackFeature : uint32_t {
    FeatureBackward = 1u << 0, // autograd engine, *Backward0 nodes, Tensor.backward
    FeatureAccumulateGrad = 1u << 1, // a parameter's .grad being written
    FeatureOptimizer = 1u << 2, // torch/optim/
    FeatureOptimizerInit = 1u << 3, // _init_group: lazy optimizer state creation
    FeatureZeroGrad = 1u << 4,
    FeatureForward = 1u << 5, // nn.Module call or a forward() frame
    FeatureNoGrad = 1u << 6, // a frame named for no_grad / inference_mode
    FeatureEvalName = 1u << 7, // evaluate/validate/predict/generate in user code
    FeatureLoad = 1u << 8, // _apply/.to()/.cuda() on a module, load_state_dict, torch.load, module __init__
    FeatureData = 1u << 9, // torch.utils.data, pin_memory, collate
    FeatureTensorTo = 1u << 10, // C++ Tensor.to()/.cuda() binding (a copy to the device)
    // torch.utils._contextlib's decorate_context: @no_grad, but equally @enable_grad or
    // @inference_mode, so it only means "no grad" outside an optimizer step.
    FeatureGradModeDecorator = 1u << 11,
    // The update's own arithmetic: _multi_tensor_*/_fused_* implementations and _foreach_* ops.
    // Their results are the step's intermediates, never state kept across steps (state is made
    // by _init_group/_init_state, or inline in step() before PyTorch 2.0).
    FeatureOptimizerStepMath = 1u << 12,
    // Inference engines and RL iterations (enginemarkers.h reads them off the frames).
    FeatureEngine = 1u << 13, // vLLM, SGLang or TensorRT-LLM code
    FeatureKvCache = 1u << 14, // a KV cache's allocation (engine or Hugging Face cache_utils)
    FeatureRollout = 1u << 15,
    FeatureReference = 1u << 16,
    FeatureReward = 1u << 17,
    FeatureWeightSync = 1u << 18,
    FeatureSleep = 1u << 19,
    FeatureWake = 1u << 20,
    FeatureOffload = 1u << 21,
    FeatureReload = 1u << 22,
    FeatureMovesOptimizerState = 1u << 23, // an offload/reload named for the optimizer's state
    FeatureMovesGradients = 1u << 24, // an offload/reload named for the gradients
    // A training framework's evaluation loop, which runs everything under it with grad disabled:
    // Hugging Face Trainer's evaluation_loop/prediction_loop/prediction_step, Lightning's
    // evaluation loop. What it allocates is evaluation, model frames or not.
    FeatureEvalLoop = 1u << 25,
    // DeepSpeed ZeRO's initialize_optimizer_states: the engine's constructor steps the optimizer
    // once with zero gradients so that its state exists before the first batch (stage3.py,
    // stage_1_and_2.py, bf16_optimizer.py: "to allocate internal optimizer state ... at the
    // beginning of training"). Set-up, not a training step.
    FeatureOptimizerSetup = 1u << 26,
};

// The RL iteration's stage markers; the innermost one decides a stack's phase (Phase::Rollout..).
constexpr uint32_t iterationFeatures = FeatureRollout | FeatureReference | FeatureReward | FeatureWeightSync
    | FeatureSleep | FeatureWake | FeatureOffload | FeatureReload;

class StackFeatures
{
public:
    StackFeatures(const Snapshot& snapshot);

    uint32_t features(StackId stack);
    // Decided by rankPhase (phaseranking.h), the order tracebacks are decided by as well: the
    // innermost kind of work, backward over a forward it re-runs, evaluation as a mode over the
    // forward; an RL stage or an engine's work names all but the update's backward and optimizer.
    Phase phase(StackId stack);
    // The outermost `forward` frame (the model's top-level forward), invalid when none. A
    // forward-only trace starts a new pass when this frame's line jumps back.
    FrameId topForwardFrame(StackId stack);
    // The engine of the innermost engine frame (vLLM, SGLang, ...), None when no frame is an engine's.
    Engine engine(StackId stack);

private:
    struct Entry
    {
        uint32_t features = 0;
        FrameId topForward;
        Phase phase = Phase::Unknown;
        Engine engine = Engine::None;
        bool computed = false;
    };
    const Entry& entry(StackId stack);
    uint32_t frameFeatures(FrameId frame);

    const Snapshot& m_snapshot;
    std::vector<Entry> m_stacks;
    std::vector<uint32_t> m_frames; // per frame: features | computedBit
    std::vector<Engine> m_frameEngine; // per frame, set with its features
    static constexpr uint32_t computedBit = 1u << 31;
    static constexpr uint32_t forwardNameBit = 1u << 30;
    static constexpr uint32_t loadWordBit = 1u << 29; // loading by the frame's own words, not a constructor's
};

} // namespace oomlens
