"""Call stacks as a recent PyTorch records them with `_record_memory_history(stacks="all")`:
innermost first, C++ frames of the allocator and the operator under the Python frames that led
there. A frame here is (filename, line, name, source line); the source line goes only into the
traceback text. Stacks are written outermost first, like a traceback, and reversed on output.

File paths, line numbers and function names follow the upstream sources of the era (PyTorch 2.5-2.7,
FSDP1 `torch/distributed/fsdp/_runtime_utils.py`, FSDP2 `torch/distributed/fsdp/_fully_shard/`,
DDP's reducer, DeepSpeed `runtime/zero/stage_1_and_2.py`, vLLM `worker/`, `v1/worker/`, SGLang
`mem_cache/memory_pool.py`, `torch/cuda/graphs.py`, `torch/utils/checkpoint.py`); line numbers are
close to those releases, not exact.
"""


def site(prefix):
    return prefix.rstrip("/")


class Paths:
    def __init__(self, site_packages, user_dir):
        self.sp = site(site_packages)
        self.user = site(user_dir)
        self.t = self.sp + "/torch"

    # --- torch.nn ----------------------------------------------------------------------------------
    def call(self, module_file, line, name="forward", code="..."):
        """A module call: Module.__call__ -> its forward."""
        return [(self.t + "/nn/modules/module.py", 1739, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
                (self.t + "/nn/modules/module.py", 1750, "_call_impl", "return forward_call(*args, **kwargs)"),
                (module_file, line, name, code)]

    def linear(self):
        return self.call(self.t + "/nn/modules/linear.py", 125, "forward", "return F.linear(input, self.weight, self.bias)")

    def to_device(self, user_file, line, code="model = model.to(device)"):
        return [(user_file, line, "<module>" if "main" not in user_file else "main", code),
                (self.t + "/nn/modules/module.py", 1343, "to", "return self._apply(convert)"),
                (self.t + "/nn/modules/module.py", 903, "_apply", "module._apply(fn)"),
                (self.t + "/nn/modules/module.py", 930, "_apply", "param_applied = fn(param)"),
                (self.t + "/nn/modules/module.py", 1329, "convert", "return t.to(")]

    def backward_call(self, user_file, line, code="loss.backward()"):
        return [(user_file, line, "train_step", code),
                (self.t + "/_tensor.py", 626, "backward", "torch.autograd.backward("),
                (self.t + "/autograd/__init__.py", 347, "backward", "_engine_run_backward("),
                (self.t + "/autograd/graph.py", 823, "_engine_run_backward",
                 "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass")]

    def optimizer_step(self, user_file, line, kind="adamw"):
        return [(user_file, line, "train_step", "optimizer.step()"),
                (self.t + "/optim/optimizer.py", 493, "wrapper", "out = func(*args, **kwargs)"),
                (self.t + "/optim/optimizer.py", 91, "_use_grad", "ret = func(self, *args, **kwargs)"),
                (self.t + "/optim/%s.py" % kind, 209, "step", "adamw(" if kind == "adamw" else "adam("),
                (self.t + "/optim/%s.py" % kind, 155, "_init_group", "state[\"exp_avg\"] = torch.zeros_like(")]

    # --- checkpointing ---------------------------------------------------------------------------
    def ckpt_nonreentrant_forward(self):
        return [(self.t + "/utils/checkpoint.py", 495, "checkpoint", "ret = function(*args, **kwargs)")]

    def ckpt_nonreentrant_recompute(self):
        # The saved-tensor unpack hook runs on the autograd engine's thread during backward and
        # re-runs the block under torch.utils.checkpoint's recompute function.
        return [(self.t + "/utils/checkpoint.py", 1124, "unpack_hook", "frame.recompute_fn(*args)"),
                (self.t + "/utils/checkpoint.py", 1518, "recompute_fn", "fn(*args, **kwargs)")]

    def ckpt_reentrant_recompute(self):
        return [(self.t + "/autograd/function.py", 307, "apply", "return user_fn(self, *args)"),
                (self.t + "/utils/checkpoint.py", 319, "backward", "outputs = ctx.run_function(*detached_inputs)")]

    def ckpt_reentrant_forward(self):
        return [(self.t + "/utils/checkpoint.py", 488, "checkpoint",
                 "return CheckpointFunction.apply(function, preserve, *args)"),
                (self.t + "/autograd/function.py", 575, "apply", "return super().apply(*args, **kwargs)  # type: ignore[misc]"),
                (self.t + "/utils/checkpoint.py", 264, "forward", "outputs = run_function(*args)")]

    # --- CUDA graphs ---------------------------------------------------------------------------
    def cuda_graph_capture(self):
        return [(self.t + "/cuda/graphs.py", 185, "__enter__", "self.cuda_graph.capture_begin(")]


# C++ frames every allocation starts with (innermost first after reversal), as `stacks="all"`
# records them: the unwinder, the caching allocator, the empty tensor factory of the operator.
CPP_ALLOC = [
    ("??", 0, "torch::unwind::unwind()", None),
    ("??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)", None),
    ("memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()", None),
    ("CUDACachingAllocator.cpp", 0,
     "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", None),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", None),
    ("", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", None),
]
CPP_ALLOC.reverse()  # stacks here are outermost first

CPP_EMPTY = [("??", 0, "at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", None),
             ("??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)", None)]

CPP_ENGINE = [("??", 0, "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", None),
              ("??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", None),
              ("??", 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", None),
              ("??", 0, "torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&)", None)]


def cpp_op(name):
    return [("??", 0, name, None)]


NCCL_CPP = [("ProcessGroupNCCL.cpp", 0, "c10d::ProcessGroupNCCL::collective<...>(...)", None)]
