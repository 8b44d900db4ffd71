"""A small transformer training loop, replayed against allocsim.CachingAllocator.

It produces the allocations a real `model.to(device)` / forward / `loss.backward()` / `Adam.step()` /
`zero_grad(set_to_none=True)` / `@torch.no_grad()` evaluation make, with the call stacks PyTorch records for
them: Python frames only (`stacks="python"`) or mixed C++/CPython/Python frames (`stacks="all"`), innermost
first, built from shared frame dicts so that the pickler memoizes them as PyTorch's snapshot builder does.

Standard library only.
"""

import random

SITE_PACKAGES = "/opt/conda/lib/python3.11/site-packages/"
PROJECT = "/home/ml/tinygpt/"
CPYTHON = "/usr/local/src/conda/python-3.11.7/"


class Site:
    """A Python call site: one traceback line and the source text shown under it."""

    __slots__ = ("filename", "line", "name", "code")

    def __init__(self, filename, line, name, code):
        self.filename = filename
        self.line = line
        self.name = name
        self.code = code


def _torch(path, line, name, code):
    return Site(SITE_PACKAGES + "torch/" + path, line, name, code)


def _user(path, line, name, code):
    return Site(PROJECT + path, line, name, code)


# Python call sites, named by where they are. Line numbers follow PyTorch 2.5-2.8 sources.
MODULE_MAIN = _user("train.py", 96, "<module>", "main()")
MAIN_TO = _user("train.py", 44, "main", "model = TinyGPT(cfg).to(device)")
MAIN_IDS = _user("train.py", 58, "main", "ids, labels = ids.to(device), labels.to(device)")
MAIN_FWD = _user("train.py", 59, "main", "logits = model(ids)")
MAIN_LOSS = _user("train.py", 60, "main", "loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())")
MAIN_BWD = _user("train.py", 61, "main", "loss.backward()")
MAIN_BWD_RETAIN = _user("train.py", 61, "main", "loss.backward(retain_graph=True)")
MAIN_STEP = _user("train.py", 62, "main", "optimizer.step()")
MAIN_ZERO = _user("train.py", 63, "main", "optimizer.zero_grad(set_to_none=True)")
MAIN_EVAL = _user("train.py", 70, "main", "val_logits = evaluate(model, val_loader, device)")
EVAL_FWD = _user("train.py", 28, "evaluate", "preds.append(model(ids.to(device)))")
EVAL_FWD_ARGMAX = _user("train.py", 28, "evaluate", "preds.append(model(ids.to(device)).argmax(-1))")
EVAL_CAT = _user("train.py", 29, "evaluate", "return torch.cat(preds)")
DECORATE = _torch("utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)")

MOD_TO = _torch("nn/modules/module.py", 1369, "to", "return self._apply(convert)")
MOD_APPLY = _torch("nn/modules/module.py", 928, "_apply", "module._apply(fn)")
MOD_APPLY_PARAM = _torch("nn/modules/module.py", 955, "_apply", "param_applied = fn(param)")
MOD_CONVERT = _torch("nn/modules/module.py", 1355, "convert", "return t.to(")
WRAPPED_CALL = _torch("nn/modules/module.py", 1773, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)")
CALL_IMPL = _torch("nn/modules/module.py", 1784, "_call_impl", "return forward_call(*args, **kwargs)")
LINEAR_FWD = _torch("nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)")
NORM_FWD = _torch("nn/modules/normalization.py", 217, "forward", "return F.layer_norm(")
F_LAYER_NORM = _torch("nn/functional.py", 2910, "layer_norm", "return torch.layer_norm(")
EMB_FWD = _torch("nn/modules/sparse.py", 190, "forward", "return F.embedding(")
F_EMBEDDING = _torch("nn/functional.py", 2551, "embedding",
                     "return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)")
F_CROSS_ENTROPY = _torch("nn/functional.py", 3494, "cross_entropy", "return torch._C._nn.cross_entropy_loss(")

GPT_EMB = _user("model.py", 71, "forward", "x = self.emb(ids)")
GPT_BLOCK = _user("model.py", 73, "forward", "x = block(x)")
GPT_HEAD = _user("model.py", 74, "forward", "return self.head(self.ln(x))")
BLK_ATTN = _user("model.py", 51, "forward", "x = x + self.attention(self.ln1(x))")
BLK_MLP = _user("model.py", 52, "forward", "return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))")
ATT_QKV = _user("model.py", 43, "attention", "q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)")
ATT_SCORES = _user("model.py", 44, "attention", "scores = (q @ k.transpose(-2, -1)) * self.scale")
ATT_MASK = _user("model.py", 45, "attention", "mask = torch.triu(torch.ones(t, t, device=x.device, dtype=torch.bool), 1)")
ATT_SOFTMAX = _user("model.py", 46, "attention", "scores = scores.masked_fill(mask, float(\"-inf\")).softmax(-1)")
ATT_OUT = _user("model.py", 47, "attention", "out = (scores @ v).transpose(1, 2).reshape(b, t, -1)")
ATT_PROJ = _user("model.py", 48, "attention", "return self.proj(out)")

TENSOR_BWD = _torch("_tensor.py", 648, "backward", "torch.autograd.backward(")
AUTOGRAD_BWD = _torch("autograd/__init__.py", 353, "backward", "_engine_run_backward(")
ENGINE_RUN_BWD = _torch("autograd/graph.py", 824, "_engine_run_backward",
                        "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass")
MAKE_GRADS = _torch("autograd/__init__.py", 220, "_make_grads", "torch.ones_like(out, memory_format=torch.preserve_format)")
AUTOGRAD_BWD_GRADS = _torch("autograd/__init__.py", 340, "backward", "grad_tensors_ = _make_grads(")

OPT_WRAPPER = _torch("optim/optimizer.py", 487, "wrapper", "out = func(*args, **kwargs)")
OPT_USE_GRAD = _torch("optim/optimizer.py", 91, "_use_grad", "ret = func(self, *args, **kwargs)")
ADAM_STEP_INIT = _torch("optim/adam.py", 223, "step", "has_complex = self._init_group(")
ADAM_EXP_AVG = _torch("optim/adam.py", 167, "_init_group", "state[\"exp_avg\"] = torch.zeros_like(")
ADAM_EXP_AVG_SQ = _torch("optim/adam.py", 171, "_init_group", "state[\"exp_avg_sq\"] = torch.zeros_like(")
ADAM_STEP_RUN = _torch("optim/adam.py", 247, "step", "adam(")
ADAM_FUNC = _torch("optim/adam.py", 933, "adam", "func(")
ADAM_SQRT = _torch("optim/adam.py", 720, "_multi_tensor_adam", "exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)")
ADAM_DONE = _torch("optim/adam.py", 731, "_multi_tensor_adam",
                   "torch._foreach_addcdiv_(device_params, device_exp_avgs, exp_avg_sq_sqrt, step_size)")
OPT_ZERO_GRAD = _torch("optim/optimizer.py", 980, "zero_grad", "p.grad = None")
# fused=True: _init_group puts the step counter on the device, and one fused kernel updates everything in place.
ADAM_STEP_ZERO = _torch("optim/adam.py", 161, "_init_group",
                        "torch.zeros((), dtype=_get_scalar_dtype(is_fused=group[\"fused\"]), device=p.device)")
# torch.nn.utils.clip_grad_norm_ (foreach): one 0-dim norm per gradient, their stack, the total and the coefficient.
CLIP_WRAPPER = _torch("nn/utils/clip_grad.py", 38, "_no_grad_wrapper", "return func(*args, **kwargs)")
CLIP_TOTAL = _torch("nn/utils/clip_grad.py", 219, "clip_grad_norm_",
                    "total_norm = _get_total_norm(grads, norm_type, error_if_nonfinite, foreach)")
CLIP_NORMS = _torch("nn/utils/clip_grad.py", 101, "_get_total_norm",
                    "norms.extend(torch._foreach_norm(device_tensors, norm_type))")
CLIP_STACK = _torch("nn/utils/clip_grad.py", 111, "_get_total_norm",
                    "total_norm = torch.linalg.vector_norm(torch.stack([norm.to(first_device) for norm in norms]), norm_type)")
CLIP_SCALE = _torch("nn/utils/clip_grad.py", 224, "clip_grad_norm_", "_clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)")
CLIP_COEF = _torch("nn/utils/clip_grad.py", 156, "_clip_grads_with_norm_", "clip_coef = max_norm / (total_norm + 1e-6)")

# Other shapes of the training script (a scenario picks them through Trainer.sites).
MAIN_TO_BF16 = _user("train.py", 44, "main", "model = TinyGPT(cfg).to(device, dtype=torch.bfloat16)")
MAIN_EXCEPT = _user("train.py", 66, "main", "except torch.OutOfMemoryError:")
MAIN_EMPTY_CACHE = _user("train.py", 68, "main", "torch.cuda.empty_cache()")
MAIN_CLIP = _user("train.py", 62, "main", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)")
# A closure optimizer (L-BFGS style, or Lightning's automatic optimization): forward and backward run inside
# optimizer.step(closure), after the closure's own zero_grad.
MAIN_STEP_CLOSURE = _user("train.py", 71, "main", "optimizer.step(closure)")
ADAM_CLOSURE = _torch("optim/adam.py", 214, "step", "loss = closure()")
CLOSURE_ZERO = _user("train.py", 63, "closure", "optimizer.zero_grad(set_to_none=True)")
CLOSURE_FWD = _user("train.py", 64, "closure", "logits = model(ids)")
CLOSURE_LOSS = _user("train.py", 65, "closure", "loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())")
CLOSURE_BWD = _user("train.py", 66, "closure", "loss.backward()")
# A Hugging Face Trainer-style loop (transformers 4.4x with accelerate): the script only calls trainer.train().
TRANSFORMERS = SITE_PACKAGES + "transformers/"
ACCELERATE = SITE_PACKAGES + "accelerate/"
HF_MAIN = _user("finetune.py", 88, "<module>", "trainer.train()")
HF_LOAD = _user("finetune.py", 61, "<module>", "model = TinyGPT(cfg).to(\"cuda\")")
HF_TRAIN = Site(TRANSFORMERS + "trainer.py", 2245, "train", "return inner_training_loop(")
HF_INNER_STEP = Site(TRANSFORMERS + "trainer.py", 2560, "_inner_training_loop",
                     "tr_loss_step = self.training_step(model, inputs, num_items_in_batch)")
HF_PREPARE = Site(TRANSFORMERS + "trainer.py", 3700, "training_step", "inputs = self._prepare_inputs(inputs)")
HF_PREPARE_INPUTS = Site(TRANSFORMERS + "trainer.py", 3662, "_prepare_inputs", "inputs = self._prepare_input(inputs)")
HF_PREPARE_INPUT = Site(TRANSFORMERS + "trainer.py", 3644, "_prepare_input", "return data.to(**kwargs)")
HF_COMPUTE = Site(TRANSFORMERS + "trainer.py", 3724, "training_step",
                  "loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)")
HF_MODEL = Site(TRANSFORMERS + "trainer.py", 3781, "compute_loss", "outputs = model(**inputs)")
GPT_LOSS = _user("model.py", 77, "forward", "loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())")
HF_BWD = Site(TRANSFORMERS + "trainer.py", 3759, "training_step", "self.accelerator.backward(loss, **kwargs)")
ACC_BWD = Site(ACCELERATE + "accelerator.py", 2246, "backward", "loss.backward(**kwargs)")
HF_OPT_STEP = Site(TRANSFORMERS + "trainer.py", 2618, "_inner_training_loop", "self.optimizer.step()")
ACC_OPT_STEP = Site(ACCELERATE + "optimizer.py", 171, "step", "self.optimizer.step(closure)")
HF_ZERO = Site(TRANSFORMERS + "trainer.py", 2641, "_inner_training_loop", "self.optimizer.zero_grad()")
ACC_ZERO = Site(ACCELERATE + "optimizer.py", 115, "zero_grad", "self.optimizer.zero_grad(set_to_none=set_to_none)")
HF_MAYBE_EVAL = Site(TRANSFORMERS + "trainer.py", 2683, "_inner_training_loop", "self._maybe_log_save_evaluate(")
HF_LOG_SAVE_EVAL = Site(TRANSFORMERS + "trainer.py", 3097, "_maybe_log_save_evaluate",
                        "metrics = self._evaluate(trial, ignore_keys_for_eval)")
HF_EVALUATE_INNER = Site(TRANSFORMERS + "trainer.py", 3044, "_evaluate",
                         "metrics = self.evaluate(ignore_keys=ignore_keys_for_eval)")
HF_EVALUATE = Site(TRANSFORMERS + "trainer.py", 4051, "evaluate", "output = eval_loop(")
HF_PREDICT = Site(TRANSFORMERS + "trainer.py", 4245, "evaluation_loop",
                  "losses, logits, labels = self.prediction_step(model, inputs, prediction_loss_only, "
                  "ignore_keys=ignore_keys)")
HF_PREDICT_PREPARE = Site(TRANSFORMERS + "trainer.py", 4464, "prediction_step", "inputs = self._prepare_inputs(inputs)")
HF_PREDICT_MODEL = Site(TRANSFORMERS + "trainer.py", 4490, "prediction_step", "outputs = model(**inputs)")
HF_PREPROCESS = Site(TRANSFORMERS + "trainer.py", 4267, "evaluation_loop",
                     "logits = self.preprocess_logits_for_metrics(logits, labels)")
USER_ARGMAX = _user("finetune.py", 40, "preprocess_logits_for_metrics", "return logits.argmax(dim=-1)")
HF_ADD_PREDS = Site(TRANSFORMERS + "trainer.py", 4273, "evaluation_loop", "all_preds.add(logits)")
HF_PT_ADD = Site(TRANSFORMERS + "trainer_pt_utils.py", 322, "add",
                 "self.tensors = nested_concat(self.tensors, tensors, padding_index=self.padding_index)")
HF_NESTED_CONCAT = Site(TRANSFORMERS + "trainer_pt_utils.py", 132, "nested_concat",
                        "return torch_pad_and_concatenate(tensors, new_tensors, padding_index=padding_index)")
HF_PAD_CAT = Site(TRANSFORMERS + "trainer_pt_utils.py", 88, "torch_pad_and_concatenate",
                  "return torch.cat((tensor1, tensor2), dim=0)")

# The C++ side. Allocation always enters through the caching allocator; the op chain above it is the
# dispatcher path of the ATen operator that asked for memory.
ALLOC_PREFIX = (
    ("torch::unwind::unwind()", "??"),
    ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
    ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, "
     "CUstream_st*)", "CUDACachingAllocator.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, "
     "CUstream_st*)", ""),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
    ("c10::StorageImpl::StorageImpl(c10::StorageImpl::use_byte_size_t, c10::SymInt const&, c10::Allocator*, bool)",
     ""),
    ("at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, "
     "c10::ScalarType, std::optional<c10::MemoryFormat>)", "EmptyTensor.cpp"),
    ("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, "
     "std::optional<c10::MemoryFormat>)", "??"),
    ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, "
     "std::optional<c10::MemoryFormat>)", "??"),
    ("at::detail::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
    ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)", "??"),
)
FREE_PREFIX = (
    ("torch::unwind::unwind()", "??"),
    ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
    ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::CUDACachingAllocator::"
     "Native::(anonymous namespace)::Block*)", "CUDACachingAllocator.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::local_raw_delete(void*)", ""),
    ("c10::StorageImpl::~StorageImpl()", "??"),
    ("c10::TensorImpl::~TensorImpl()", "TensorImpl.cpp"),
    ("c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reset_()", "??"),
)
ENGINE = (
    ("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
     "torch/csrc/autograd/function.h"),
    ("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, "
     "torch::autograd::InputBuffer&)", "torch/csrc/autograd/engine.cpp"),
    ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, "
     "torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)",
     "torch/csrc/autograd/engine.cpp"),
    ("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
     "torch/csrc/autograd/engine.cpp"),
    ("torch::autograd::Engine::execute_with_graph_task(std::shared_ptr<torch::autograd::GraphTask> const&, "
     "std::shared_ptr<torch::autograd::Node>, torch::autograd::InputBuffer&&)", "torch/csrc/autograd/engine.cpp"),
    ("torch::autograd::python::PythonEngine::execute_with_graph_task(std::shared_ptr<torch::autograd::GraphTask> "
     "const&, std::shared_ptr<torch::autograd::Node>, torch::autograd::InputBuffer&&)",
     "torch/csrc/autograd/python_engine.cpp"),
    ("torch::autograd::Engine::execute(std::vector<torch::autograd::Edge, std::allocator<torch::autograd::Edge> > "
     "const&, std::vector<at::Tensor, std::allocator<at::Tensor> > const&, bool, bool, bool, "
     "std::vector<torch::autograd::Edge, std::allocator<torch::autograd::Edge> > const&)",
     "torch/csrc/autograd/engine.cpp"),
    ("torch::autograd::python::PythonEngine::execute(std::vector<torch::autograd::Edge, "
     "std::allocator<torch::autograd::Edge> > const&, std::vector<at::Tensor, std::allocator<at::Tensor> > const&, "
     "bool, bool, bool, std::vector<torch::autograd::Edge, std::allocator<torch::autograd::Edge> > const&)",
     "torch/csrc/autograd/python_engine.cpp"),
    ("THPEngine_run_backward(_object*, _object*, _object*)", "torch/csrc/autograd/python_engine.cpp"),
)
PROCESS_TAIL = (
    ("_PyEval_EvalFrameDefault", CPYTHON + "Python/ceval.c", 5945),
    ("_PyEval_Vector", CPYTHON + "Include/internal/pycore_ceval.h", 73),
    ("PyEval_EvalCode", CPYTHON + "Python/ceval.c", 1148),
    ("run_eval_code_obj", CPYTHON + "Python/pythonrun.c", 1741),
    ("run_mod", CPYTHON + "Python/pythonrun.c", 1762),
    ("pyrun_file", CPYTHON + "Python/pythonrun.c", 1657),
    ("_PyRun_SimpleFileObject", CPYTHON + "Python/pythonrun.c", 440),
    ("_PyRun_AnyFileObject", CPYTHON + "Python/pythonrun.c", 79),
    ("Py_RunMain", CPYTHON + "Modules/main.c", 684),
    ("Py_BytesMain", CPYTHON + "Modules/main.c", 738),
    ("__libc_start_main", "../csu/libc-start.c", 308),
    ("_start", "??", 0),
)
# The CPython frames between two Python frames, by how the outer frame called the inner one.
CALL_GLUE = {
    "function": (("_PyEval_EvalFrameDefault", CPYTHON + "Python/ceval.c", 5945),
                 ("_PyFunction_Vectorcall", CPYTHON + "Include/internal/pycore_ceval.h", 73)),
    "method": (("_PyEval_EvalFrameDefault", CPYTHON + "Python/ceval.c", 5945),
               ("method_vectorcall", CPYTHON + "Objects/classobject.c", 89)),
    "module": (("_PyEval_EvalFrameDefault", CPYTHON + "Python/ceval.c", 5945),
               ("_PyFunction_Vectorcall", CPYTHON + "Include/internal/pycore_ceval.h", 73),
               ("_PyObject_FastCallDictTstate", CPYTHON + "Objects/call.c", 141),
               ("_PyObject_Call_Prepend", CPYTHON + "Objects/call.c", 482),
               ("slot_tp_call", CPYTHON + "Objects/typeobject.c", 7494),
               ("_PyObject_MakeTpCall", CPYTHON + "Objects/call.c", 214)),
}
# A tensor freed when a Python frame drops its last reference.
DEALLOC_GLUE = (("subtype_dealloc", CPYTHON + "Objects/typeobject.c", 1471),
                ("_Py_Dealloc", CPYTHON + "Objects/object.c", 2390),
                ("_PyFrame_ClearExceptCode", CPYTHON + "Python/frame.c", 139),
                ("clear_thread_frame", CPYTHON + "Python/ceval.c", 6388),
                ("_PyEval_FrameClearAndPop", CPYTHON + "Python/ceval.c", 6419))
# `python -m` / torchrun start the script through runpy.
RUNPY = (Site("/opt/conda/lib/python3.11/runpy.py", 198, "_run_module_as_main",
              "return _run_code(code, main_globals, None,"),
         Site("/opt/conda/lib/python3.11/runpy.py", 88, "_run_code", "exec(code, run_globals)"))
# A deeper training script: main() -> train() -> run_epoch() -> training_step(), where the step lines live.
TRAIN_CHAIN = (_user("train.py", 131, "main", "train(cfg, model, optimizer, loaders)"),
               _user("train.py", 117, "train", "run_epoch(model, optimizer, loaders.train, device, epoch)"),
               _user("train.py", 104, "run_epoch", "loss = training_step(model, optimizer, batch, device)"))
BUILTIN_GLUE = (("cfunction_call", CPYTHON + "Objects/methodobject.c", 542),
                ("_PyObject_MakeTpCall", CPYTHON + "Objects/call.c", 214))


def op_chain(op, signature, register="RegisterCUDA_0.cpp", variable_type="VariableType_0.cpp",
             composite=None, binding=None):
    """The dispatcher frames of an ATen op, innermost first: structured kernel, wrapper, boxing glue,
    autograd VariableType, `at::_ops::<op>::call`, optional composite op and the Python binding."""
    chain = [
        ("at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, "
         "c10::TensorOptions const&)", register),
        ("at::(anonymous namespace)::structured_%s_out_functional::set_output_raw_strided(long, "
         "c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions, c10::ArrayRef<at::Dimname>)" % op, register),
        ("at::meta::structured_%s::meta(%s)" % (op, signature), "??"),
        ("at::(anonymous namespace)::wrapper_CUDA_%s(%s)" % (op, signature), register),
        ("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
         "c10::CompileTimeFunctionPointer<at::Tensor (%s), &at::(anonymous namespace)::wrapper_CUDA_%s>, "
         "at::Tensor, c10::guts::typelist::typelist<%s> >, at::Tensor (%s)>::call(c10::OperatorKernel*, "
         "c10::DispatchKeySet, %s)" % (signature, op, signature, signature, signature), register),
        ("at::_ops::%s::redispatch(c10::DispatchKeySet, %s)" % (op, signature), "??"),
        ("torch::autograd::VariableType::(anonymous namespace)::%s(c10::DispatchKeySet, %s)" % (op, signature),
         variable_type),
        ("at::_ops::%s::call(%s)" % (op, signature), "??"),
    ]
    if composite:
        chain.append(("at::native::%s" % composite, "??"))
        name = composite.split("(")[0]
        chain.append(("at::_ops::%s::call(%s)" % (name, composite[len(name) + 1:-1]), "??"))
    chain.append((binding or "torch::autograd::THPVariable_%s(_object*, _object*, _object*)" % op,
                  "python_variable_methods.cpp" if binding is None else "python_torch_functions_0.cpp"))
    return tuple(chain)


T = "at::Tensor const&"
OPS = {
    "to": op_chain("_to_copy", T + ", std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
                   "std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>",
                   composite="to(%s, c10::TensorOptions, bool, bool, std::optional<c10::MemoryFormat>)" % T,
                   binding="torch::autograd::THPVariable_to(_object*, _object*, _object*)"),
    "linear": op_chain("addmm", "%s, %s, %s, c10::Scalar const&, c10::Scalar const&" % (T, T, T),
                       composite="linear(%s, %s, std::optional<at::Tensor> const&)" % (T, T),
                       binding="torch::autograd::THPVariable_linear(_object*, _object*, _object*)"),
    "layer_norm": op_chain("native_layer_norm", "%s, c10::ArrayRef<c10::SymInt>, std::optional<at::Tensor> const&, "
                           "std::optional<at::Tensor> const&, double" % T, register="RegisterCUDA_1.cpp",
                           composite="layer_norm_symint(%s, c10::ArrayRef<c10::SymInt>, "
                           "std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, double, bool)" % T,
                           binding="torch::autograd::THPVariable_layer_norm(_object*, _object*, _object*)"),
    "embedding": op_chain("index_select", "%s, long, %s" % (T, T),
                          composite="embedding_symint(%s, %s, c10::SymInt, bool, bool)" % (T, T),
                          binding="torch::autograd::THPVariable_embedding(_object*, _object*, _object*)"),
    "bmm": op_chain("bmm", "%s, %s" % (T, T), composite="matmul(%s, %s)" % (T, T),
                    binding="torch::autograd::THPVariable_matmul(_object*, _object*, _object*)"),
    "mul": op_chain("mul_Tensor", "%s, %s" % (T, T), binding="torch::autograd::THPVariable_mul(_object*, _object*, "
                    "_object*)"),
    "ones": op_chain("fill_", "at::Tensor&, c10::Scalar const&", composite="ones(c10::ArrayRef<long>, "
                     "c10::TensorOptions const&)", binding="torch::autograd::THPVariable_ones(_object*, _object*, "
                     "_object*)"),
    "triu": op_chain("triu", "%s, long" % T, binding="torch::autograd::THPVariable_triu(_object*, _object*, "
                     "_object*)"),
    "masked_fill": op_chain("masked_fill_Scalar", "%s, %s, c10::Scalar const&" % (T, T)),
    "softmax": op_chain("_softmax", "%s, long, bool" % T, composite="softmax(%s, long, std::optional<c10::ScalarType>)"
                        % T),
    "clone": op_chain("clone", "%s, std::optional<c10::MemoryFormat>" % T, composite="reshape_symint(%s, "
                      "c10::ArrayRef<c10::SymInt>)" % T),
    "add": op_chain("add_Tensor", "%s, %s, c10::Scalar const&" % (T, T)),
    "gelu": op_chain("gelu", "%s, c10::basic_string_view<char>" % T, register="RegisterCUDA_1.cpp",
                     binding="torch::autograd::THPVariable_gelu(_object*, _object*, _object*)"),
    "log_softmax": op_chain("_log_softmax", "%s, long, bool" % T,
                            composite="cross_entropy_loss_symint(%s, %s, std::optional<at::Tensor> const&, long, "
                            "c10::SymInt, double)" % (T, T),
                            binding="torch::autograd::THPVariable_cross_entropy_loss(_object*, _object*, _object*)"),
    "nll_loss": op_chain("nll_loss_forward", "%s, %s, std::optional<at::Tensor> const&, long, long" % (T, T),
                         composite="cross_entropy_loss_symint(%s, %s, std::optional<at::Tensor> const&, long, "
                         "c10::SymInt, double)" % (T, T),
                         binding="torch::autograd::THPVariable_cross_entropy_loss(_object*, _object*, _object*)"),
    "ones_like": op_chain("fill_", "at::Tensor&, c10::Scalar const&", composite="ones_like(%s, "
                          "std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, "
                          "std::optional<bool>, std::optional<c10::MemoryFormat>)" % T,
                          binding="torch::autograd::THPVariable_ones_like(_object*, _object*, _object*)"),
    "zeros_like": op_chain("zero_", "at::Tensor&", composite="zeros_like(%s, std::optional<c10::ScalarType>, "
                           "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
                           "std::optional<c10::MemoryFormat>)" % T,
                           binding="torch::autograd::THPVariable_zeros_like(_object*, _object*, _object*)"),
    "foreach_sqrt": op_chain("_foreach_sqrt", "c10::ArrayRef<at::Tensor>", register="RegisterCUDA_2.cpp",
                             binding="torch::autograd::THPVariable__foreach_sqrt(_object*, _object*, _object*)"),
    "zeros": op_chain("zero_", "at::Tensor&", composite="zeros(c10::ArrayRef<long>, std::optional<c10::ScalarType>, "
                      "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>)",
                      binding="torch::autograd::THPVariable_zeros(_object*, _object*, _object*)"),
    "foreach_norm": op_chain("_foreach_norm_Scalar", "c10::ArrayRef<at::Tensor>, c10::Scalar const&, "
                             "std::optional<c10::ScalarType>", register="RegisterCUDA_2.cpp",
                             binding="torch::autograd::THPVariable__foreach_norm(_object*, _object*, _object*)"),
    "stack": op_chain("cat", "c10::IListRef<at::Tensor> const&, long", composite="stack(c10::ArrayRef<at::Tensor>, "
                      "long)", binding="torch::autograd::THPVariable_stack(_object*, _object*, _object*)"),
    "vector_norm": op_chain("linalg_vector_norm", "%s, c10::Scalar const&, at::OptionalArrayRef<long>, bool, "
                            "std::optional<c10::ScalarType>" % T, register="RegisterCUDA_1.cpp",
                            binding="torch::autograd::THPVariable_linalg_vector_norm(_object*, _object*, _object*)"),
    "div": op_chain("div_Tensor", "%s, %s" % (T, T)),
    "argmax": op_chain("argmax", "%s, std::optional<long>, bool" % T, register="RegisterCUDA_1.cpp"),
    "cat": op_chain("cat", "c10::IListRef<at::Tensor> const&, long",
                    binding="torch::autograd::THPVariable_cat(_object*, _object*, _object*)"),
}
# Backward nodes: the ATen op they call and the generated autograd Node around it.
BACKWARD_NODES = {
    "linear": ("mm", "AddmmBackward0"), "layer_norm": ("native_layer_norm_backward", "NativeLayerNormBackward0"),
    "bmm": ("bmm", "BmmBackward0"), "softmax": ("_softmax_backward_data", "SoftmaxBackward0"),
    "gelu": ("gelu_backward", "GeluBackward0"), "masked_fill": ("where_self", "MaskedFillBackward0"),
    "mul": ("mul_Tensor", "MulBackward0"), "log_softmax": ("_log_softmax_backward_data", "LogSoftmaxBackward0"),
    "nll_loss": ("nll_loss_backward", "NllLossBackward0"), "clone": ("clone", "CloneBackward0"),
    "permute": ("cat", "StackBackward0"), "embedding": ("embedding_dense_backward", "EmbeddingBackward0"),
    "add": ("add_Tensor", "AddBackward0"),
}


class Context:
    """One captured traceback. Events that share a Context share one frame list object in the pickle."""

    __slots__ = ("stack", "_list")

    def __init__(self, stack):
        self.stack = stack
        self._list = None

    def frames(self):
        if self._list is None:
            self._list = list(self.stack)
        return self._list


class Stacks:
    """Builds frame tuples (innermost first) from Python call sites and C++ op chains, interning every frame
    dict and every stack so that identical frames are one object."""

    def __init__(self, cpp=True, outer=(), chain=()):
        self.cpp = cpp
        self.outer = outer          # Python sites above <module>, e.g. RUNPY
        self.chain = chain          # sites between <module> and the main() lines, e.g. TRAIN_CHAIN
        self._renamed = {}
        self._frames = {}
        self._stacks = {}

    def frame(self, name, filename, line):
        key = (name, filename, line)
        f = self._frames.get(key)
        if f is None:
            f = self._frames[key] = {"name": name, "filename": filename, "line": line}
        return f

    def all_frames(self):
        return list(self._frames.values())

    def stack(self, sites, op=None, kind="alloc", backward=None):
        """sites: Python call sites outermost first. op: key of OPS. kind: "alloc" or "free".
        backward: the op whose backward node runs (the allocation comes from the autograd engine)."""
        key = (sites, op, kind, backward)
        s = self._stacks.get(key)
        if s is None:
            if self.chain and len(sites) > 1 and sites[1].name == "main":
                sites = (sites[0],) + self.chain + (self._rename(sites[1]),) + sites[2:]
            s = self._stacks[key] = tuple(self._build(self.outer + sites, op, kind, backward))
        return s

    def _rename(self, site):
        r = self._renamed.get(site)
        if r is None:
            r = self._renamed[site] = Site(site.filename, site.line, "training_step", site.code)
        return r

    def _build(self, sites, op, kind, backward):
        f = self.frame
        out = []
        if self.cpp:
            for name, filename in (ALLOC_PREFIX if kind == "alloc" else FREE_PREFIX):
                out.append(f(name, filename, 0))
            if backward is not None:
                aten, node = BACKWARD_NODES[backward]
                if kind == "alloc":
                    out.extend(f(n, fn, 0) for n, fn in op_chain(aten, "%s, %s" % (T, T))[:-1])
                else:
                    out.append(f("torch::autograd::SavedVariable::reset_data()", "torch/csrc/autograd/saved_variable.cpp",
                                 0))
                    out.append(f("torch::autograd::generated::%s::release_variables()" % node,
                                 "torch/csrc/autograd/generated/Functions.h", 0))
                out.append(f("torch::autograd::generated::%s::apply(std::vector<at::Tensor, "
                             "std::allocator<at::Tensor> >&&)" % node,
                             "torch/csrc/autograd/generated/Functions.cpp", 0))
                out.extend(f(n, fn, 0) for n, fn in ENGINE)
            elif op is not None and kind == "alloc":
                out.extend(f(n, fn, 0) for n, fn in OPS[op])
            elif kind == "free":
                out.append(f("THPVariable_subclass_dealloc(_object*)", "python_variable.cpp", 0))
                out.extend(f(*g) for g in DEALLOC_GLUE)
            if kind == "alloc" or backward is not None:
                out.extend(f(*g) for g in BUILTIN_GLUE)
        inner = list(reversed(sites))
        for i, site in enumerate(inner):
            out.append(f(site.name, site.filename, site.line))
            if self.cpp:
                if i + 1 < len(inner):
                    caller = inner[i + 1]
                    glue = "module" if caller in (CALL_IMPL,) else ("method" if site.name in (
                        "forward", "attention", "backward", "step", "_init_group", "zero_grad") else "function")
                    out.extend(f(*g) for g in CALL_GLUE[glue])
                else:
                    out.extend(f(*g) for g in PROCESS_TAIL)
        return out


class Clock:
    """time_us: epoch microseconds, advancing by a few to a few hundred microseconds per event."""

    def __init__(self, seed, base=1757253255000000):
        self.now = base
        self._rng = random.Random(seed)

    def tick(self, lo=2, hi=40):
        self.now += self._rng.randint(lo, hi)
        return self.now


class Config:
    """The model (TinyGPT sizes, `dtype_bytes` 2 for 16-bit weights and activations) and the optimizer:
    "foreach" (torch.optim.Adam/AdamW's default multi-tensor path, whose step allocates exp_avg_sq_sqrt for every
    parameter) or "fused" (fused=True: the step counters live on the device, the update needs no temporaries)."""

    def __init__(self, vocab=8192, d=512, layers=4, heads=8, batch=8, dtype_bytes=4, optimizer="foreach"):
        self.vocab = vocab
        self.d = d
        self.layers = layers
        self.heads = heads
        self.batch = batch
        self.dtype_bytes = dtype_bytes
        self.optimizer = optimizer

    def params(self):
        """(name, bytes) in module registration order, as model.to(device) moves them."""
        d, v, e = self.d, self.vocab, self.dtype_bytes
        out = [("emb.weight", v * d * e)]
        for i in range(self.layers):
            p = "blocks.%d." % i
            out += [(p + "ln1.weight", d * e), (p + "ln1.bias", d * e),
                    (p + "qkv.weight", 3 * d * d * e), (p + "qkv.bias", 3 * d * e),
                    (p + "proj.weight", d * d * e), (p + "proj.bias", d * e),
                    (p + "ln2.weight", d * e), (p + "ln2.bias", d * e),
                    (p + "fc1.weight", 4 * d * d * e), (p + "fc1.bias", 4 * d * e),
                    (p + "fc2.weight", 4 * d * d * e), (p + "fc2.bias", d * e)]
        out += [("ln.weight", d * e), ("ln.bias", d * e), ("head.weight", v * d * e)]
        return out


# The Python lines of the training script each phase runs under, outermost first; a scenario replaces entries to
# change the loop's shape (a closure optimizer, a Trainer-style loop, a different load line).
DEFAULT_SITES = {"load": (MODULE_MAIN, MAIN_TO), "ids": (MODULE_MAIN, MAIN_IDS), "fwd": (MODULE_MAIN, MAIN_FWD),
                 "loss": (MODULE_MAIN, MAIN_LOSS), "bwd": (MODULE_MAIN, MAIN_BWD),
                 "bwd_retain": (MODULE_MAIN, MAIN_BWD_RETAIN), "step": (MODULE_MAIN, MAIN_STEP),
                 "zero": (MODULE_MAIN, MAIN_ZERO), "eval": (MODULE_MAIN, MAIN_EVAL), "clip": (MODULE_MAIN, MAIN_CLIP)}


class Forward:
    """The tensors one forward pass leaves alive for backward."""

    def __init__(self):
        self.layers = []
        self.head = None
        self.logits = None


class Trainer:
    """Replays a TinyGPT training run (embedding, pre-LN blocks with eager attention, LM head) against the
    allocator. `phase` and `step` always say where the run is; `last_sites` are the Python frames of the last
    allocation (the failing one after an OutOfMemory)."""

    def __init__(self, allocator, stacks, clock, cfg, on_phase=None):
        self.a = allocator
        self.s = stacks
        self.clock = clock
        self.cfg = cfg
        self.on_phase = on_phase
        self.sites = dict(DEFAULT_SITES)
        self.phase = "load"
        self.step = 0
        self.params = {}
        self.grads = {}
        self.state = {}
        self.last_sites = ()
        self.phase_allocs = 0       # allocations made so far in the current phase
        self.log = None             # when a list: (step, phase, index in phase, bytes, op) of every allocation
        self.step_start_seq = 0     # the allocator's allocation counter when the current step began
        self.annotations = []
        self._ids = []
        self._logits = None
        self._loss = []

    # -- primitives -------------------------------------------------------------------------------------
    def alloc(self, nbytes, sites, op, backward=None):
        self.last_sites = sites
        if self.log is not None:
            self.log.append((self.step, self.phase, self.phase_allocs, nbytes, op))
        self.phase_allocs += 1
        self.clock.tick(5, 120)
        return self.a.malloc(nbytes, 0, Context(self.s.stack(sites, op, "alloc", backward)))

    def free(self, addr, sites, backward=None):
        self.clock.tick(2, 30)
        self.a.free(addr, Context(self.s.stack(sites, None, "free", backward)))

    def set_phase(self, phase):
        if self.on_phase is not None:
            self.on_phase(self.step, self.phase)
        if phase != self.phase:
            self.phase_allocs = 0
        self.phase = phase

    def annotate(self, name, stage):
        self.annotations.append({"stage": stage, "name": name, "device": self.a.device, "time_us": self.clock.now})

    # -- phases -----------------------------------------------------------------------------------------
    def load(self):
        self.set_phase("load")
        base = self.sites["load"] + (MOD_TO,)
        for name, nbytes in self.cfg.params():
            sites = base + (MOD_APPLY,) * name.count(".") + (MOD_APPLY_PARAM, MOD_CONVERT)
            self.params[name] = (self.alloc(nbytes, sites, "to"), nbytes)

    def train_step(self, seq, retain_graph=False, keep_outputs=False, clip=False, closure=False):
        """One `logits = model(ids)`, `loss.backward()`, [`clip_grad_norm_`], `optimizer.step()`,
        `zero_grad(set_to_none=True)`. With `keep_outputs` the previous step's logits stay referenced. With
        `closure` the script is `optimizer.step(closure)`: the closure zeroes the gradients first, and its logits
        die when it returns, before the update."""
        self.step += 1
        self.step_start_seq = self.a.alloc_seq
        self.annotate("ProfilerStep#%d" % self.step, "START")
        self.set_phase("forward")
        c = self.cfg
        main_ids = self.sites["ids"]
        ids = [self.alloc(c.batch * seq * 8, main_ids, "to") for _ in range(2)]
        for old in self._ids:
            self.free(old, main_ids)
        self._ids = ids
        if closure:
            self.zero_grad()
        fwd = self.forward(seq, self.sites["fwd"], grad=True)
        if self._logits is not None and not keep_outputs:
            self.free(self._logits, self.sites["fwd"])
        self._logits = fwd.logits
        loss_sites = self.sites["loss"] + (F_CROSS_ENTROPY,)
        fwd.lsm = self.alloc(c.batch * seq * c.vocab * c.dtype_bytes, loss_sites, "log_softmax")
        loss = [self.alloc(4, loss_sites, "nll_loss"), self.alloc(4, loss_sites, "nll_loss")]
        if not retain_graph:
            for old in self._loss:
                self.free(old, self.sites["loss"])
            self._loss = []
        self._loss += loss
        self.set_phase("backward")
        self.backward(fwd, seq, retain_graph)
        if closure:
            self.free(self._logits, self.sites["fwd"])
            self._logits = None
        self.set_phase("optimizer")
        if clip:
            self.clip_grad_norm()
        self.optimizer_step()
        if not closure:
            self.zero_grad()
        self.annotate("ProfilerStep#%d" % self.step, "END")

    def forward(self, seq, call, grad):
        c = self.cfg
        bt = c.batch * seq
        btd = bt * c.d * c.dtype_bytes
        scores = c.batch * c.heads * seq * seq * c.dtype_bytes
        top = call + (WRAPPED_CALL, CALL_IMPL)
        fwd = Forward()
        alloc, free = self.alloc, self.free
        x = alloc(btd, top + (GPT_EMB, WRAPPED_CALL, CALL_IMPL, EMB_FWD, F_EMBEDDING), "embedding")
        for _ in range(c.layers):
            blk = top + (GPT_BLOCK, WRAPPED_CALL, CALL_IMPL)
            att = blk + (BLK_ATTN,)
            norm = att + (WRAPPED_CALL, CALL_IMPL, NORM_FWD, F_LAYER_NORM)
            lay = {"x": x}
            lay["ln1"] = alloc(btd, norm, "layer_norm")
            lay["m1"] = alloc(bt * 4, norm, "layer_norm")
            lay["r1"] = alloc(bt * 4, norm, "layer_norm")
            lay["qkv"] = alloc(3 * btd, att + (ATT_QKV, WRAPPED_CALL, CALL_IMPL, LINEAR_FWD), "linear")
            s1 = alloc(scores, att + (ATT_SCORES,), "bmm")
            s2 = alloc(scores, att + (ATT_SCORES,), "mul")
            free(s1, att + (ATT_SCORES,))
            ones = alloc(seq * seq, att + (ATT_MASK,), "ones")
            lay["mask"] = alloc(seq * seq, att + (ATT_MASK,), "triu")
            free(ones, att + (ATT_MASK,))
            s3 = alloc(scores, att + (ATT_SOFTMAX,), "masked_fill")
            free(s2, att + (ATT_SOFTMAX,))
            lay["probs"] = alloc(scores, att + (ATT_SOFTMAX,), "softmax")
            free(s3, att + (ATT_SOFTMAX,))
            bo = alloc(btd, att + (ATT_OUT,), "bmm")
            lay["out"] = alloc(btd, att + (ATT_OUT,), "clone")
            free(bo, att + (ATT_OUT,))
            proj = alloc(btd, att + (ATT_PROJ, WRAPPED_CALL, CALL_IMPL, LINEAR_FWD), "linear")
            lay["x1"] = alloc(btd, att, "add")
            free(proj, att)
            mlp = blk + (BLK_MLP,)
            norm = mlp + (WRAPPED_CALL, CALL_IMPL, NORM_FWD, F_LAYER_NORM)
            lay["ln2"] = alloc(btd, norm, "layer_norm")
            lay["m2"] = alloc(bt * 4, norm, "layer_norm")
            lay["r2"] = alloc(bt * 4, norm, "layer_norm")
            lin = mlp + (WRAPPED_CALL, CALL_IMPL, LINEAR_FWD)
            lay["fc1"] = alloc(4 * btd, lin, "linear")
            lay["g"] = alloc(4 * btd, mlp, "gelu")
            fc2 = alloc(btd, lin, "linear")
            x = alloc(btd, mlp, "add")
            free(fc2, mlp)
            if grad:
                fwd.layers.append(lay)
            else:
                # without autograd nothing is saved: every intermediate dies when Block.forward returns
                for key in ("x", "ln1", "m1", "r1", "qkv", "mask", "probs", "out", "x1", "ln2", "m2", "r2", "fc1",
                            "g"):
                    free(lay[key], blk)
        head = top + (GPT_HEAD,)
        norm = head + (WRAPPED_CALL, CALL_IMPL, NORM_FWD, F_LAYER_NORM)
        fwd.head = {"x": x, "ln": alloc(btd, norm, "layer_norm"), "m": alloc(bt * 4, norm, "layer_norm"),
                    "r": alloc(bt * 4, norm, "layer_norm")}
        fwd.logits = alloc(bt * c.vocab * c.dtype_bytes, head + (WRAPPED_CALL, CALL_IMPL, LINEAR_FWD), "linear")
        if not grad:
            for key in ("x", "ln", "m", "r"):
                free(fwd.head[key], top)
        return fwd

    def backward(self, fwd, seq, retain_graph):
        c = self.cfg
        bt = c.batch * seq
        btd = bt * c.d * c.dtype_bytes
        scores = c.batch * c.heads * seq * seq * c.dtype_bytes
        main = self.sites["bwd_retain" if retain_graph else "bwd"]
        sites = main + (TENSOR_BWD, AUTOGRAD_BWD, ENGINE_RUN_BWD)
        seed = self.alloc(4, main + (TENSOR_BWD, AUTOGRAD_BWD_GRADS, MAKE_GRADS), "ones_like")

        def new(nbytes, node):
            return self.alloc(nbytes, sites, None, backward=node)

        def done(addr, node):
            self.free(addr, sites, backward=node)

        def release(addr, node):
            # saved tensors die with the graph, unless retain_graph keeps it
            if not retain_graph:
                self.free(addr, sites, backward=node)

        def grad(name, node):
            nbytes = self.params[name][1]
            g = new(nbytes, node)
            if name in self.grads:
                done(g, "add")
            else:
                self.grads[name] = g

        g = new(bt * c.vocab * c.dtype_bytes, "nll_loss")
        done(seed, "nll_loss")
        g2 = new(bt * c.vocab * c.dtype_bytes, "log_softmax")
        done(g, "log_softmax")
        release(fwd.lsm, "log_softmax")
        h = fwd.head
        g = new(btd, "linear")
        grad("head.weight", "linear")
        done(g2, "linear")
        release(h["ln"], "linear")
        gx = new(btd, "layer_norm")
        grad("ln.weight", "layer_norm")
        grad("ln.bias", "layer_norm")
        done(g, "layer_norm")
        for key in ("m", "r", "x"):
            release(h[key], "layer_norm")
        for i in reversed(range(c.layers)):
            lay = fwd.layers[i]
            p = "blocks.%d." % i
            gg = new(4 * btd, "linear")
            grad(p + "fc2.weight", "linear")
            grad(p + "fc2.bias", "linear")
            release(lay["g"], "linear")
            gf = new(4 * btd, "gelu")
            done(gg, "gelu")
            release(lay["fc1"], "gelu")
            gl = new(btd, "linear")
            grad(p + "fc1.weight", "linear")
            grad(p + "fc1.bias", "linear")
            done(gf, "linear")
            release(lay["ln2"], "linear")
            gp = new(btd, "layer_norm")
            grad(p + "ln2.weight", "layer_norm")
            grad(p + "ln2.bias", "layer_norm")
            done(gl, "layer_norm")
            for key in ("m2", "r2", "x1"):
                release(lay[key], "layer_norm")
            done(gp, "add")
            go = new(btd, "linear")
            grad(p + "proj.weight", "linear")
            grad(p + "proj.bias", "linear")
            release(lay["out"], "linear")
            gb = new(btd, "clone")
            done(go, "clone")
            gpr = new(scores, "bmm")
            gv = new(btd, "bmm")
            done(gb, "bmm")
            gm = new(scores, "softmax")
            done(gpr, "softmax")
            release(lay["probs"], "softmax")
            gs = new(scores, "masked_fill")
            done(gm, "masked_fill")
            release(lay["mask"], "masked_fill")
            gsc = new(scores, "mul")
            done(gs, "mul")
            gq = new(btd, "bmm")
            gk = new(btd, "bmm")
            done(gsc, "bmm")
            gqkv = new(3 * btd, "permute")
            for t in (gq, gk, gv):
                done(t, "permute")
            gl = new(btd, "linear")
            grad(p + "qkv.weight", "linear")
            grad(p + "qkv.bias", "linear")
            done(gqkv, "linear")
            release(lay["qkv"], "linear")
            release(lay["ln1"], "linear")
            gp = new(btd, "layer_norm")
            grad(p + "ln1.weight", "layer_norm")
            grad(p + "ln1.bias", "layer_norm")
            done(gl, "layer_norm")
            for key in ("m1", "r1", "x"):
                release(lay[key], "layer_norm")
            done(gp, "add")
        grad("emb.weight", "embedding")
        done(gx, "embedding")

    def clip_grad_norm(self):
        """clip_grad_norm_(model.parameters(), 1.0), foreach: small 0-dim tensors, all freed on return."""
        base = self.sites["clip"] + (CLIP_WRAPPER,)
        names = [n for n, _ in self.cfg.params() if n in self.grads]
        total = base + (CLIP_TOTAL,)
        norms = [self.alloc(4, total + (CLIP_NORMS,), "foreach_norm") for _ in names]
        stacked = self.alloc(4 * len(names), total + (CLIP_STACK,), "stack")
        norm = self.alloc(4, total + (CLIP_STACK,), "vector_norm")
        for t in norms + [stacked]:
            self.free(t, total)
        scale = base + (CLIP_SCALE, CLIP_COEF)
        coef = [self.alloc(4, scale, "add"), self.alloc(4, scale, "div")]
        for t in coef + [norm]:
            self.free(t, base)

    def optimizer_step(self):
        """Adam/AdamW: state is created lazily by _init_group on the first step; the foreach update allocates
        exp_avg_sq_sqrt for every parameter and frees it before returning, the fused one allocates nothing."""
        self.annotate("Optimizer.step#Adam.step", "START")
        base = self.sites["step"] + (OPT_WRAPPER, OPT_USE_GRAD)
        names = [n for n, _ in self.cfg.params() if n in self.grads]
        fused = self.cfg.optimizer == "fused"
        for name in names:
            if name not in self.state:
                nbytes = self.params[name][1]
                counter = self.alloc(4, base + (ADAM_STEP_INIT, ADAM_STEP_ZERO), "zeros") if fused else None
                self.state[name] = (self.alloc(nbytes, base + (ADAM_STEP_INIT, ADAM_EXP_AVG), "zeros_like"),
                                    self.alloc(nbytes, base + (ADAM_STEP_INIT, ADAM_EXP_AVG_SQ), "zeros_like"),
                                    counter)
        if fused:
            self.annotate("Optimizer.step#Adam.step", "END")
            return
        run = base + (ADAM_STEP_RUN, ADAM_FUNC)
        sqrt = [self.alloc(self.params[n][1], run + (ADAM_SQRT,), "foreach_sqrt") for n in names]
        for t in sqrt:
            self.free(t, run + (ADAM_DONE,))
        self.annotate("Optimizer.step#Adam.step", "END")

    def zero_grad(self):
        self.annotate("Optimizer.zero_grad#Adam.zero_grad", "START")
        for name in [n for n, _ in self.cfg.params() if n in self.grads]:
            self.free(self.grads.pop(name), self.sites["zero"] + (OPT_ZERO_GRAD,))
        self.annotate("Optimizer.zero_grad#Adam.zero_grad", "END")

    def evaluate(self, batches, seq, accumulate):
        """`@torch.no_grad() def evaluate(...)`; with `accumulate` the logits of every batch are kept on the
        GPU (the eval_accumulation bug), otherwise only their argmax. `seq`: one length, or one per batch."""
        self.set_phase("eval")
        c = self.cfg
        call = self.sites["eval"] + (DECORATE, EVAL_FWD if accumulate else EVAL_FWD_ARGMAX)
        preds = []
        seqs = tuple(seq) if isinstance(seq, (tuple, list)) else (seq,) * batches
        for seq in seqs:
            ids = self.alloc(c.batch * seq * 8, call, "to")
            fwd = self.forward(seq, call, grad=False)
            self.free(ids, call)
            if accumulate:
                preds.append((fwd.logits, c.batch * seq * c.vocab * c.dtype_bytes))
            else:
                preds.append((self.alloc(c.batch * seq * 8, call, "argmax"), c.batch * seq * 8))
                self.free(fwd.logits, call)
        cat_sites = self.sites["eval"] + (DECORATE, EVAL_CAT)
        out = self.alloc(sum(n for _, n in preds), cat_sites, "cat")
        for addr, _ in preds:
            self.free(addr, self.sites["eval"])
        return out
