#pragma once

#include <cstdint>
#include <string_view>

namespace oomlens {

// What one frame's file and function say about the work it does: the one vocabulary that the
// snapshot's stacks (StackFeatures) and a traceback's frames (decideTracebackPhase) are read by.
// Filenames are whatever co_filename was: absolute site-packages paths, relative paths, or
// Windows backslashes; every path word matches the package-relative tail with either separator.
// Functions are bare names ("evaluate", not "Trainer.evaluate(self)"); C++ frames (stacks='all')
// carry demangled names with "::".
enum FrameWord : uint32_t {
    // The autograd engine and what runs inside it: Tensor.backward, torch.autograd.backward, the
    // engine's C++ frames and *Backward0 nodes, checkpointing's recomputation, gradient hooks of
    // sharded data parallelism, and the frameworks' own backward entries (Accelerator.backward,
    // DeepSpeedEngine.backward, Megatron's backward_step).
    WordBackward = 1u << 0,
    WordAccumulateGrad = 1u << 1, // a parameter's .grad being written
    // An optimizer's package: torch.optim and the optimizers that subclass it elsewhere (apex,
    // Transformer Engine, DeepSpeed, bitsandbytes, Megatron-Core, fairseq), and gradient clipping.
    WordOptimizer = 1u << 2,
    WordOptimizerStateInit = 1u << 3, // _init_group / _init_state: lazy optimizer state creation
    WordOptimizerSetup = 1u << 4, // DeepSpeed ZeRO's initialize_optimizer_states at engine build
    // The update's own arithmetic: _multi_tensor_* / _single_tensor_* / _fused_* / _foreach_*.
    WordOptimizerStepMath = 1u << 5,
    WordZeroGrad = 1u << 6,
    WordModuleCall = 1u << 7, // nn.Module.__call__ (_call_impl, _wrapped_call_impl)
    WordForwardName = 1u << 8, // a function named forward (or a layer's _conv_forward)
    // A layer of a model library (transformers' modeling files, diffusers' attention processors,
    // torch.nn.functional, attention kernels): only ever runs inside a model's forward.
    WordModelLibrary = 1u << 9,
    // JAX running a compiled program: a jitted apply, not yet known to be a training step.
    WordCompiledProgram = 1u << 10,
    // torch.utils._contextlib's decorate_context: @no_grad, but equally @enable_grad or
    // @inference_mode, so it only means "no grad" outside an optimizer step.
    WordGradModeDecorator = 1u << 11,
    WordNoGradName = 1u << 12, // a frame named for no_grad / inference_mode
    // Evaluation by name: a framework's evaluation or generation entry point, or the user's own
    // function named for it (library code is full of names like _validate_args or infer_size that
    // run in every forward, so only the user's own files are read by prefixes).
    WordEvaluation = 1u << 13,
    // A training framework's evaluation loop, which runs everything under it with grad disabled.
    WordEvalLoop = 1u << 14,
    // Loading or placing the weights: torch.load, load_state_dict, from_pretrained, Module.to/_apply,
    // safetensors, init functions, functions named for loading or building the model.
    WordLoad = 1u << 15,
    // A constructor (__init__): building a module allocates its weights, but a forward may construct
    // small objects too, so it says loading only where nothing else in the stack decides.
    WordConstructor = 1u << 16,
    // Input data: torch.utils.data, pin_memory, collate, the user's own batch builder (get_batch).
    WordData = 1u << 17,
    WordTensorToDevice = 1u << 18, // C++ Tensor.to()/.cuda() binding (a copy to the device)
    WordCompiler = 1u << 19, // torch._dynamo / torch._inductor frames: torch.compile is on
    // A framework's file (an installed package, PyTorch itself, the standard library), not the program's.
    WordFramework = 1u << 20,
    // An activation-checkpointing implementation's frame (torch.utils.checkpoint, FSDP's
    // checkpoint_wrapper, Megatron's and DeepSpeed's CheckpointFunction): checkpointing is on.
    WordCheckpointing = 1u << 21,
    // Where backward re-runs a checkpointed forward (CheckpointFunction.backward, the non-reentrant
    // variant's unpack hook / recompute_fn); also a WordBackward.
    WordRecompute = 1u << 22,
    // The <module> frame of a script the user named for evaluation ("python eval.py", test.py,
    // inference.py). Only a traceback reads it, where backward or an optimizer frame outranks it
    // when they show; a snapshot's forward stacks carry no backward frame to outrank it, so there a
    // training run started from test.py would read as evaluation.
    WordEvaluationScript = 1u << 23,
    // torch.utils._device's hook: a `with torch.device(...)` block (or torch.set_default_device) is
    // open. Models are built that way, but the hook is the innermost frame of every factory call
    // under it, a forward's included, so like a constructor it says loading only where nothing else
    // in the stack decides.
    WordDeviceContext = 1u << 24,
};

// All the words one frame carries.
uint32_t frameWords(std::string_view file, std::string_view function);

// `file` contains `tail` ("torch/optim/") with '/' or with '\\' as the separator.
bool inPackage(std::string_view file, std::string_view tail);

bool isPythonFile(std::string_view filename);
// True for a Python source file that belongs to PyTorch itself: a path with a `torch`
// directory ("torch/nn/modules/module.py", ".../site-packages/torch/optim/adam.py",
// "C:\...\torch\autograd\graph.py"). "mytorch/" or "pytorch_lightning/" are not PyTorch.
bool isPyTorchFile(std::string_view filename);
// A file of an installed package, a framework's code rather than the program's: a path through
// site-packages or dist-packages (pip, conda, Debian's python3-*), with either separator.
bool isInstalledPackageFile(std::string_view filename);
// Framework code (WordFramework): an installed package, PyTorch itself, or the standard library.
bool isFrameworkFile(std::string_view filename);
// Code torch.compile generated (Inductor's output code): a compiled region's allocations come from
// it, and with augment_with_fx_traces PyTorch 2.11 puts the model lines that produced each FX node
// right after its frame, so the user frame is found past it.
bool isCompilerGeneratedFile(std::string_view filename);

} // namespace oomlens
