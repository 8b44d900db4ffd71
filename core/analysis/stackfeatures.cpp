#include "core/analysis/stackfeatures.h"
#include "core/strings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <string_view>

namespace oomlens {

namespace {

// Filenames are whatever co_filename was: absolute site-packages paths, relative paths, or on
// Windows backslashes. Match the package-relative tail only.
bool inTorch(std::string_view filename, std::string_view tail)
{
    return contains(filename, tail);
}

bool isEvalName(std::string_view name)
{
    static constexpr std::array<std::string_view, 12> prefixes = { "eval", "valid", "val_", "predict", "generate",
        "infer", "test_step", "sample", "greedy_search", "beam_search", "_sample", "run_inference" };
    std::string lower(name.substr(0, 32));
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return lower.starts_with(p); });
}

} // namespace

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
    uint32_t f = 0;

    // C++ frames (stacks='all' / record_context_cpp) carry demangled names with "::".
    if (contains(name, "torch::autograd::Engine::") || contains(name, "PythonEngine::thread")
        || (contains(name, "Backward") && contains(name, "::")))
        f |= FeatureBackward;
    if (contains(name, "AccumulateGrad"))
        f |= FeatureBackward | FeatureAccumulateGrad;
    if (name == "_engine_run_backward" || name == "_make_grads" || name == "run_backward"
        || (name == "backward" && (inTorch(file, "torch/_tensor.py") || inTorch(file, "torch/autograd/"))))
        f |= FeatureBackward;
    // Activation checkpointing re-runs the forward from inside backward (CheckpointFunction.backward,
    // or the saved-tensor unpack hook of the non-reentrant variant); under stacks='python' these
    // frames are the only sign that the recomputation is backward's, not a new forward.
    if (inTorch(file, "torch/utils/checkpoint.py")
        && (name == "backward" || name == "unpack_hook" || name == "unpack" || name == "recompute_fn"))
        f |= FeatureBackward;
    // Megatron's pipeline schedules run each micro-batch's backward through backward_step, which
    // calls the engine itself (custom_backward: Variable._execution_engine.run_backward) rather than
    // Tensor.backward: what is allocated under them is backward's work.
    if (inTorch(file, "megatron/core/pipeline_parallel/schedules.py")
        && (name == "backward_step" || name == "custom_backward"))
        f |= FeatureBackward;
    // Sharded data parallelism reduces gradients from autograd hooks, which the engine runs on its
    // own thread: under stacks='python' their frames are all the stack holds. FSDP2's post-backward
    // (RegisterPostBackwardFunction.backward -> FSDPParamGroup.post_backward -> foreach_reduce, or
    // FSDPState._root_post_backward_final_callback queued on the engine) and pre-backward unshard,
    // FSDP1's _post_backward_hook / _pre_backward_hook, DeepSpeed ZeRO's module backward hooks and
    // the per-parameter gradient hooks that reduce partitions
    // (reduce_partition_and_remove_grads, reduce_ready_partitions_and_remove_grads).
    if ((inTorch(file, "torch/distributed/fsdp/") || inTorch(file, "torch/distributed/_composable/fsdp/")
            || inTorch(file, "deepspeed/runtime/zero/"))
        && (contains(name, "backward") || contains(name, "_remove_grads")))
        f |= FeatureBackward;
    // Megatron's and DeepSpeed's own CheckpointFunction re-run the forward from their backward too.
    if (name == "backward"
        && (inTorch(file, "megatron/core/tensor_parallel/random.py")
            || inTorch(file, "deepspeed/runtime/activation_checkpointing/checkpointing.py")))
        f |= FeatureBackward;

    // Optimizers outside torch.optim subclass torch.optim.Optimizer and create their state the same
    // way, lazily in their first step(): Transformer Engine's and apex's fused Adam, DeepSpeed's,
    // bitsandbytes' 8-bit ones, Megatron-Core's optimizer wrappers.
    if (inTorch(file, "torch/optim/") || inTorch(file, "torch\\optim\\") || inTorch(file, "torch/nn/utils/clip_grad")
        || inTorch(file, "transformer_engine/pytorch/optimizers/") || inTorch(file, "apex/optimizers/")
        || inTorch(file, "deepspeed/ops/adam/") || inTorch(file, "bitsandbytes/optim/")
        || inTorch(file, "megatron/core/optimizer/"))
        f |= FeatureOptimizer;
    if (name == "_init_group" || name == "_init_state" || contains(name, "init_state"))
        f |= FeatureOptimizerInit;
    if (name == "initialize_optimizer_states" && inTorch(file, "deepspeed/runtime/"))
        f |= FeatureOptimizerSetup;
    if (name == "zero_grad")
        f |= FeatureZeroGrad;
    // Names only: PyTorch 1.9-1.12 kept whole optimizers, state creation included, in
    // torch/optim/_multi_tensor/, so the filename says nothing about what a frame allocates.
    if (contains(name, "_multi_tensor_") || contains(name, "_fused_") || contains(name, "_foreach_"))
        f |= FeatureOptimizerStepMath;

    if ((name == "_call_impl" || name == "_wrapped_call_impl") && inTorch(file, "torch/nn/modules/module.py"))
        f |= FeatureForward;
    if (name == "forward") {
        f |= FeatureForward;
        cached |= forwardNameBit;
    }
    if (name == "decorate_context")
        f |= FeatureGradModeDecorator;
    if (contains(name, "inference_mode") || contains(name, "no_grad"))
        f |= FeatureNoGrad;
    if (isEvalName(name))
        f |= FeatureEvalName;
    // Hugging Face Trainer runs prediction_step's model call under `with torch.no_grad()`, and
    // evaluation_loop/prediction_loop only call it and gather (pad, concatenate, move) what it
    // returned; Lightning's evaluation loop runs under its no-grad context (`_no_grad_context`).
    // Their own allocations, the outputs kept per batch included, carry no module frame, and
    // without a forward frame the eval-like name alone would not say evaluation.
    if (((name == "evaluation_loop" || name == "prediction_loop" || name == "prediction_step")
            && (inTorch(file, "transformers/trainer.py") || inTorch(file, "transformers/trainer_seq2seq.py")))
        || inTorch(file, "lightning/pytorch/loops/evaluation_loop.py")
        || inTorch(file, "pytorch_lightning/loops/evaluation_loop.py"))
        f |= FeatureEvalLoop;

    if (name == "_apply" || name == "load_state_dict" || name == "_load_from_state_dict" || name == "from_pretrained"
        || name == "reset_parameters" || name == "to_empty" || name == "_load_state_dict_into_model"
        || name == "__init__" || inTorch(file, "torch/serialization.py")
        || inTorch(file, "torch/nn/init.py")
        // Functions named for building or loading the model (gpt-fast's _load_model, verl's
        // init_model): what they allocate and keep is the weights, even where the stack holds
        // no torch frame inside them (a C++ loader, frames cut at max_frames).
        || name == "load_model" || name == "_load_model" || name == "init_model" || name == "build_model"
        || inTorch(file, "safetensors")
        || ((name == "to" || name == "cuda") && inTorch(file, "torch/nn/modules/module.py")))
        f |= FeatureLoad;

    if (inTorch(file, "torch/utils/data/") || contains(name, "pin_memory") || contains(name, "collate"))
        f |= FeatureData;
    if (contains(name, "THPVariable_to(") || contains(name, "THPVariable_cuda(") || contains(name, "THPVariable_to_("))
        f |= FeatureTensorTo;

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
