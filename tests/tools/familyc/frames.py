"""Stack frames as torch.cuda.memory._record_memory_history writes them: innermost first,
Python-only (stacks="python") or mixed with C++ frames (stacks="all": allocator, dispatcher,
ATen kernel, autograd engine and CPython interpreter frames). Identical frames are shared objects,
so the pickle memoizes them, which keeps the files small (the real C++ builder shares its key and
value strings the same way)."""

# nn.Module call lines by PyTorch era: (_wrapped_call_impl, _call_impl)
MODULE_LINES = {"2.0": (None, 1501), "2.1": (1518, 1527), "2.3": (1532, 1541), "2.4": (1553, 1562),
                "2.6": (1739, 1750), "2.8": (1773, 1784), "2.10": (1776, 1787)}

INTERPRETER = [
    {"name": "_PyEval_EvalFrameDefault", "filename": "/usr/local/src/conda/python-3.11.9/Python/ceval.c", "line": 0},
    {"name": "_PyFunction_Vectorcall", "filename": "/usr/local/src/conda/python-3.11.9/Objects/call.c", "line": 0},
]

ALLOCATOR_CPP = [
    {"name": "torch::unwind::unwind()", "filename": "??", "line": 0},
    {"name": "torch::CapturedTraceback::gather(bool, bool, bool)", "filename": "??", "line": 0},
    {"name": "torch::cuda::(anonymous namespace)::gather_with_cpp()", "filename": "memory_snapshot.cpp", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
     "filename": "CUDACachingAllocator.cpp", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)",
     "filename": "", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", "filename": "", "line": 0},
    {"name": "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)",
     "filename": "??", "line": 0},
    {"name": "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)",
     "filename": "??", "line": 0},
]

ATEN = {
    "linear": ["at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&, at::native::Activation)",
               "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar const&, c10::Scalar const&)",
               "at::native::linear(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)"],
    "softmax": ["at::native::structured_softmax_cuda_out::impl(at::Tensor const&, long, bool, at::Tensor const&)",
                "at::_ops::_softmax::call(at::Tensor const&, long, bool)"],
    "conv": ["at::native::cudnn_convolution(at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)",
             "at::_ops::convolution::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, bool, c10::ArrayRef<c10::SymInt>, c10::SymInt)"],
    "copy": ["at::native::_to_copy(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)",
             "at::_ops::_to_copy::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)"],
    "empty": ["at::native::zeros_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
              "at::_ops::zeros_like::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)"],
    "foreach": ["at::native::foreach_tensor_sqrt_cuda(c10::ArrayRef<at::Tensor>)", "at::_ops::_foreach_sqrt::call(c10::ArrayRef<at::Tensor>)"],
    "cat": ["at::native::structured_cat_out_cuda::impl(c10::IListRef<at::Tensor> const&, long, long, bool, bool, bool, at::native::MemoryFormat, at::Tensor const&)",
            "at::_ops::cat::call(c10::IListRef<at::Tensor> const&, long)"],
    "mm": ["at::native::bmm_out_cuda(at::Tensor const&, at::Tensor const&, at::Tensor&)", "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"],
}

ENGINE = [
    "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)",
    "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
    "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
    "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
    "execute_native_thread_routine",
    "start_thread",
    "__clone3",
]


class Frames:
    def __init__(self, stacks="python", era="2.4", site_packages="/opt/conda/lib/python3.11/site-packages",
                 user_dir="/workspace/train"):
        self.stacks = stacks
        self.era = era
        self.site = site_packages
        self.user = user_dir
        self._frames = {}
        self._lists = {}
        self.module_lines = MODULE_LINES[era]

    def path(self, file):
        if file.startswith("/") or file.startswith("<"):
            return file
        head = file.split("/")[0]
        if head in ("torch", "transformers", "timm", "torchvision", "diffusers", "accelerate", "deepspeed", "bitsandbytes", "peft"):
            return f"{self.site}/{file}"
        return f"{self.user}/{file}"

    def frame(self, file, line, name):
        key = (file, line, name)
        f = self._frames.get(key)
        if f is None:
            f = {"filename": self.path(file), "line": line, "name": name}
            self._frames[key] = f
        return f

    def _cpp(self, name, file="??"):
        key = ("cpp", name, file)
        f = self._frames.get(key)
        if f is None:
            f = {"name": name, "filename": file, "line": 0}
            self._frames[key] = f
        return f

    def module_call(self):
        wrapped, call = self.module_lines
        chain = []
        if wrapped:
            chain.append(("torch/nn/modules/module.py", wrapped, "_wrapped_call_impl"))
        chain.append(("torch/nn/modules/module.py", call, "_call_impl"))
        return chain

    def stack(self, chain, aten=None):
        """chain: Python frames outermost first as (file, line, name); aten: the C++ op family."""
        key = (tuple(chain), aten)
        got = self._lists.get(key)
        if got is not None:
            return got
        python = [self.frame(*f) for f in reversed(chain)]
        if self.stacks == "all":
            out = [self._cpp(f["name"], f["filename"]) for f in ALLOCATOR_CPP]
            for name in ATEN.get(aten or "empty", ATEN["empty"]):
                out.append(self._cpp(name))
            out.append(self._cpp("torch::autograd::THPVariable_wrapper(_object*, _object*, _object*)", "python_torch_functions_0.cpp"))
            for i, f in enumerate(python):
                out.append(f)
                if i % 2 == 0:
                    out.extend(self._cpp(x["name"], x["filename"]) for x in INTERPRETER)
            out.append(self._cpp("Py_RunMain", "/usr/local/src/conda/python-3.11.9/Modules/main.c"))
            out.append(self._cpp("__libc_start_main", "??"))
        else:
            out = python
        self._lists[key] = out
        return out

    def engine(self, node, aten="mm"):
        """An allocation made by the autograd engine's device thread: no Python frame exists there."""
        key = ("engine", node, aten)
        got = self._lists.get(key)
        if got is not None:
            return got
        if self.stacks == "all":
            out = [self._cpp(f["name"], f["filename"]) for f in ALLOCATOR_CPP]
            for name in ATEN.get(aten, ATEN["mm"]):
                out.append(self._cpp(name))
            out.append(self._cpp(f"torch::autograd::generated::{node}::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "Functions.cpp"))
            out.append(self._cpp("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "function.h"))
            out.extend(self._cpp(n, "engine.cpp" if "Engine" in n else "??") for n in ENGINE)
        else:
            out = []
        self._lists[key] = out
        return out
