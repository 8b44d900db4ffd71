#include "core/analysis/framewords.h"

#include "core/strings.h"

#include <algorithm>
#include <initializer_list>
#include <string>

namespace oomlens {

namespace {

bool isAny(std::string_view value, std::initializer_list<std::string_view> options)
{
    return std::find(options.begin(), options.end(), value) != options.end();
}

// Activation checkpointing's own frames: where the checkpointed region starts and where backward
// re-runs it. Megatron's and DeepSpeed's CheckpointFunction live in files with other helpers, so
// there only the function's own names count.
uint32_t checkpointWords(std::string_view file, std::string_view name)
{
    const bool recomputes = isAny(name, { "backward", "unpack_hook", "unpack", "recompute_fn" });
    if (inPackage(file, "torch/utils/checkpoint.py"))
        return WordCheckpointing | (recomputes ? WordRecompute : 0u);
    if (inPackage(file, "checkpoint_wrapper.py") || name == "_gradient_checkpointing_func"
        || name == "_checkpointed_forward")
        return WordCheckpointing;
    if (inPackage(file, "megatron/core/tensor_parallel/random.py")
        || inPackage(file, "deepspeed/runtime/activation_checkpointing/checkpointing.py")) {
        if (name == "backward")
            return WordCheckpointing | WordRecompute;
        return isAny(name, { "checkpoint", "forward" }) ? WordCheckpointing : 0u;
    }
    return 0;
}

bool isBackward(std::string_view file, std::string_view name)
{
    // C++ frames of the engine's threads and its nodes.
    if (contains(name, "torch::autograd::Engine::") || contains(name, "PythonEngine::thread")
        || (contains(name, "Backward") && contains(name, "::")))
        return true;
    if (isAny(name, { "_engine_run_backward", "_make_grads", "run_backward" }))
        return true;
    // Tensor.backward and torch.autograd.backward; Accelerator.backward and DeepSpeedEngine.backward
    // scale the loss and call it (a ZeRO optimizer's backward as well).
    if (name == "backward"
        && (inPackage(file, "torch/_tensor.py") || inPackage(file, "torch/autograd/") || inPackage(file, "accelerate/")
            || inPackage(file, "deepspeed/")))
        return true;
    // Megatron's pipeline schedules run each micro-batch's backward through backward_step, which
    // calls the engine itself (custom_backward: Variable._execution_engine.run_backward).
    if (inPackage(file, "megatron/core/pipeline_parallel/schedules.py")
        && (name == "backward_step" || name == "custom_backward"))
        return true;
    // Sharded data parallelism reduces gradients from autograd hooks, which the engine runs on its
    // own thread: under stacks='python' their frames are all the stack holds. FSDP2's post-backward
    // and pre-backward unshard, FSDP1's _post_backward_hook / _pre_backward_hook, DeepSpeed ZeRO's
    // module backward hooks and the per-parameter gradient hooks that reduce partitions.
    return (inPackage(file, "torch/distributed/fsdp/") || inPackage(file, "torch/distributed/_composable/fsdp/")
               || inPackage(file, "deepspeed/runtime/zero/"))
        && (contains(name, "backward") || contains(name, "_remove_grads"));
}

// Optimizers outside torch.optim subclass torch.optim.Optimizer and keep their state the same
// way; DeepSpeed's ops/ hold kernels as well, so only its optimizer folders count there.
bool isOptimizerPackage(std::string_view file)
{
    return inPackage(file, "/optim/") || file.starts_with("optim/") || inPackage(file, "/optimizers/")
        || inPackage(file, "torch/nn/utils/clip_grad") || inPackage(file, "megatron/core/optimizer/")
        || inPackage(file, "deepspeed/ops/adam/") || inPackage(file, "deepspeed/ops/lamb/")
        || inPackage(file, "deepspeed/ops/lion/") || inPackage(file, "deepspeed/ops/adagrad/");
}

uint32_t optimizerWords(std::string_view file, std::string_view name)
{
    uint32_t words = isOptimizerPackage(file) ? WordOptimizer : 0u;
    if (name == "_init_group" || contains(name, "init_state"))
        words |= WordOptimizerStateInit;
    if (name == "initialize_optimizer_states" && inPackage(file, "deepspeed/runtime/"))
        words |= WordOptimizerSetup;
    if (name == "zero_grad")
        words |= WordZeroGrad;
    // Names only: PyTorch 1.9-1.12 kept whole optimizers, state creation included, in
    // torch/optim/_multi_tensor/, so the filename says nothing about what a frame allocates.
    if (contains(name, "_multi_tensor_") || contains(name, "_single_tensor_") || contains(name, "_fused_")
        || contains(name, "_foreach_"))
        words |= WordOptimizerStepMath;
    return words;
}

bool isModuleCall(std::string_view file, std::string_view name)
{
    // Module.__call__ itself before PyTorch 1.6 gave it _call_impl.
    return name == "_call_impl" || name == "_wrapped_call_impl"
        || (name == "__call__" && inPackage(file, "torch/nn/modules/module.py"));
}

bool isModelLibrary(std::string_view file)
{
    for (std::string_view library : { "diffusers/models/", "transformers/models/", "timm/models/",
             "torchvision/models/", "torch/nn/functional.py", "flash_attn/", "xformers/ops/" }) {
        if (inPackage(file, library))
            return true;
    }
    return false;
}

// The frameworks' own entry points, by their exact names in any file: Hugging Face Trainer's
// evaluate/predict and their loops, Lightning's step hooks, generate().
bool isEvaluationEntry(std::string_view name)
{
    return isAny(name,
        { "evaluate", "validate", "validation_step", "predict", "predict_step", "test_step", "eval_step",
            "evaluation_loop", "prediction_step", "prediction_loop", "generate", "inference", "run_inference",
            "validation_loop", "evaluate_model", "run_eval", "run_validation", "compute_metrics" });
}

// The user's own function named for evaluation, validation, prediction or sampling from the model:
// eval_epoch, run_validation, val_step, compute_metrics, predict_batch, test_loop, sample_images.
// Python's builtin eval and TF's Tensor.eval are not evaluation.
bool isEvaluationNamed(std::string_view function)
{
    if (function.empty() || function == "eval")
        return false;
    const std::string name = lowercase(function);
    const std::string_view n = name;
    for (std::string_view prefix : { "eval", "valid", "val_", "predict", "generate", "infer", "test_step", "sample",
             "_sample", "greedy_search", "beam_search" }) {
        if (n.starts_with(prefix))
            return true;
    }
    for (std::string_view part : { "_eval", "evaluat", "validat", "compute_metric", "_predict", "prediction" }) {
        if (contains(n, part))
            return true;
    }
    return n.ends_with("_val")
        || isAny(n, { "run_inference", "test_epoch", "test_loop", "val_step", "val_epoch", "val_loop", "run_val" });
}

bool isEvaluation(std::string_view file, std::string_view name, bool userCode)
{
    // GenerationMixin's decoding loops (greedy_search, sample, _sample, beam_search, ...).
    if (isEvaluationEntry(name) || inPackage(file, "transformers/generation/"))
        return true;
    // Library code is full of names like _validate_args or infer_size that run in every forward.
    return userCode && isEvaluationNamed(name);
}

// Hugging Face Trainer runs prediction_step's model call under `with torch.no_grad()`, and
// evaluation_loop/prediction_loop only call it and gather what it returned; Lightning's
// evaluation loop runs under its no-grad context (`_no_grad_context`).
bool isEvaluationLoop(std::string_view file, std::string_view name)
{
    return (isAny(name, { "evaluation_loop", "prediction_loop", "prediction_step" })
               && (inPackage(file, "transformers/trainer.py") || inPackage(file, "transformers/trainer_seq2seq.py")))
        || inPackage(file, "lightning/pytorch/loops/evaluation_loop.py")
        || inPackage(file, "pytorch_lightning/loops/evaluation_loop.py");
}

bool isLoad(std::string_view file, std::string_view name)
{
    // torch.load, nn.init's initialisers, safetensors.
    if (inPackage(file, "torch/serialization.py") || inPackage(file, "torch/nn/init.py")
        || contains(file, "safetensors"))
        return true;
    // Module.to/.cuda move every parameter through _apply and its inner convert().
    if (name == "_apply" || (isAny(name, { "to", "cuda", "convert" }) && inPackage(file, "torch/nn/modules/module.py")))
        return true;
    // from_pretrained and its helpers, load_state_dict / _load_from_state_dict and the hooks that
    // replace them, PEFT's merge_and_unload, functions named for loading or building the model
    // (gpt-fast's _load_model, verl's init_model): what they allocate and keep is the weights.
    if (contains(name, "from_pretrained") || (contains(name, "load") && contains(name, "state_dict"))
        || contains(name, "load_model") || contains(name, "unload"))
        return true;
    return isAny(name,
        { "reset_parameters", "to_empty", "init_model", "build_model", "load_checkpoint", "caching_allocator_warmup" });
}

// The user's own function that assembles a batch before the model sees it: "get_batch",
// "get_batch_pipe", "prepare_batch", "load_batch". Library helpers are not read by their names.
bool isBatchBuilder(std::string_view name, bool userCode)
{
    if (!userCode || !contains(name, "batch"))
        return false;
    for (std::string_view verb : { "get_", "load_", "prepare_", "make_", "next_", "fetch_", "build_" }) {
        if (name.starts_with(verb) || (name.starts_with("_") && name.substr(1).starts_with(verb)))
            return true;
    }
    return false;
}

bool isData(std::string_view file, std::string_view name, bool userCode)
{
    return inPackage(file, "torch/utils/data/") || contains(name, "pin_memory") || contains(name, "collate")
        || isBatchBuilder(name, userCode);
}

// A frame of compiled code (stacks='all'): the interpreter's own C functions (CPython's
// PyEval_EvalCode, run_eval_code_obj), PyTorch's C++ with its "::" names, an unknown "??" file.
// Their names are no function the user wrote.
bool isNativeFrame(std::string_view file, std::string_view name)
{
    // A frame without a file is compiled code too: the symbolizer leaves it empty where it found no
    // line table (":run_eval_code_obj"), while a Python frame always has a co_filename ("<string>",
    // "<stdin>" for code without a file).
    if (contains(name, "::") || file == "??" || file.empty())
        return true;
    for (std::string_view suffix : { ".c", ".cpp", ".cc", ".h", ".hpp", ".cu" }) {
        if (file.ends_with(suffix))
            return true;
    }
    return false;
}

// The script the user ran, when its own name says it evaluates.
bool isEvaluationScript(std::string_view file, std::string_view name, bool framework)
{
    if (name != "<module>" || framework)
        return false;
    std::string_view stem = file;
    if (const size_t slash = stem.find_last_of("/\\"); slash != std::string_view::npos)
        stem.remove_prefix(slash + 1);
    if (!stem.ends_with(".py"))
        return false;
    stem.remove_suffix(3);
    return isAny(stem,
        { "test", "eval", "evaluate", "evaluation", "validate", "validation", "val", "inference", "infer", "predict" });
}

} // namespace

bool inPackage(std::string_view file, std::string_view tail)
{
    if (contains(file, tail))
        return true;
    if (tail.find('/') == std::string_view::npos || file.find('\\') == std::string_view::npos)
        return false;
    std::string windows(tail);
    std::replace(windows.begin(), windows.end(), '/', '\\');
    return contains(file, windows);
}

uint32_t frameWords(std::string_view file, std::string_view name)
{
    const bool framework = isFrameworkFile(file);
    const bool userCode = !framework && !isNativeFrame(file, name);
    uint32_t words = checkpointWords(file, name) | optimizerWords(file, name);
    if (isBackward(file, name) || (words & WordRecompute))
        words |= WordBackward;
    if (contains(name, "AccumulateGrad"))
        words |= WordBackward | WordAccumulateGrad;
    if (isModuleCall(file, name))
        words |= WordModuleCall;
    if (name == "forward" || name == "_conv_forward")
        words |= WordForwardName;
    if (isModelLibrary(file))
        words |= WordModelLibrary;
    if (inPackage(file, "jax/") && (name == "_execute_compiled" || name == "execute_sharded_on_local_devices"))
        words |= WordCompiledProgram;
    if (name == "decorate_context")
        words |= WordGradModeDecorator;
    if (contains(name, "inference_mode") || contains(name, "no_grad"))
        words |= WordNoGradName;
    if (isEvaluation(file, name, userCode))
        words |= WordEvaluation;
    if (isEvaluationScript(file, name, framework))
        words |= WordEvaluationScript;
    if (isEvaluationLoop(file, name))
        words |= WordEvalLoop;
    if (isLoad(file, name))
        words |= WordLoad;
    if (name == "__init__")
        words |= WordConstructor;
    // `with torch.device("cuda"): model = Net()` builds the model through torch/utils/_device.py's
    // hook, whose __torch_function__ is the innermost frame of every factory call in the block
    // (and of the whole program after torch.set_default_device).
    if (inPackage(file, "torch/utils/_device.py"))
        words |= WordDeviceContext;
    if (isData(file, name, userCode))
        words |= WordData;
    if (contains(name, "THPVariable_to(") || contains(name, "THPVariable_cuda(") || contains(name, "THPVariable_to_("))
        words |= WordTensorToDevice;
    if (inPackage(file, "torch/_dynamo/") || inPackage(file, "torch/_inductor/"))
        words |= WordCompiler;
    if (framework)
        words |= WordFramework;
    return words;
}

bool isPythonFile(std::string_view filename)
{
    return filename.ends_with(".py");
}

bool isPyTorchFile(std::string_view filename)
{
    // co_filename is absolute (site-packages), relative to the working directory, or Windows.
    return filename.starts_with("torch/") || filename.starts_with("torch\\")
        || filename.find("/torch/") != std::string_view::npos || filename.find("\\torch\\") != std::string_view::npos;
}

bool isInstalledPackageFile(std::string_view filename)
{
    for (std::string_view folder : { "site-packages", "dist-packages" }) {
        for (size_t at = filename.find(folder); at != std::string_view::npos; at = filename.find(folder, at + 1)) {
            const size_t end = at + folder.size();
            if (end < filename.size() && (filename[end] == '/' || filename[end] == '\\'))
                return true;
        }
    }
    return false;
}

bool isFrameworkFile(std::string_view filename)
{
    return isInstalledPackageFile(filename) || isPyTorchFile(filename) || inPackage(filename, "/lib/python");
}

bool isCompilerGeneratedFile(std::string_view filename)
{
    // Inductor writes its output code to its cache, /tmp/torchinductor_<user>/xx/c<hash>.py by
    // default (TORCHINDUCTOR_CACHE_DIR moves it, the name stays: 'c' and 51 base32 characters).
    if (filename.find("torchinductor_") != std::string_view::npos)
        return true;
    const size_t slash = filename.find_last_of("/\\");
    const std::string_view base = slash == std::string_view::npos ? filename : filename.substr(slash + 1);
    if (base.size() != 55 || base[0] != 'c' || !base.ends_with(".py"))
        return false;
    for (char c : base.substr(1, 51)) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

} // namespace oomlens
