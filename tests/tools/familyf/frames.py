"""Stacks as PyTorch records them with stacks="all": the allocator's C++ frames innermost, the op
that allocated, then the Python frames (each followed by the interpreter frame that ran it) and
the process's entry point. Backward runs on the autograd engine's device thread, which has no
Python frames unless a Python hook runs there. Frame dicts are shared, as py_symbolize shares them."""

ALLOC_PREFIX = [
    ("torch::unwind::unwind()", "??"),
    ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
    ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
     "CUDACachingAllocator.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", ""),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
]
FREE_PREFIX = [
    ("torch::unwind::unwind()", "??"),
    ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
    ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::CUDACachingAllocator::Block*)",
     "CUDACachingAllocator.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::local_raw_delete(void*)", ""),
    ("c10::StorageImpl::~StorageImpl()", ""),
    ("c10::TensorImpl::~TensorImpl()", ""),
]
EMPTY = [("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)", "??"),
         ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)", "??")]
OPS = {
    "empty": EMPTY + [("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
                      ("torch::autograd::THPVariable_empty(_object*, _object*, _object*)", "python_torch_functions_manual.cpp")],
    "zeros_like": EMPTY + [("at::native::zeros_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
                           ("at::_ops::zeros_like::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
                           ("torch::autograd::THPVariable_zeros_like(_object*, _object*, _object*)", "python_torch_functions_0.cpp")],
    "mm": EMPTY + [("at::(anonymous namespace)::structured_mm_out_cuda_functional::set_output_raw_strided(long, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions, c10::ArrayRef<at::Dimname>)", "RegisterCUDA.cpp"),
                   ("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", "??"),
                   ("at::native::linear(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)", "??"),
                   ("at::_ops::linear::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)", "??"),
                   ("torch::autograd::THPVariable_linear(_object*, _object*, _object*)", "python_nn_functions.cpp")],
    "pointwise": EMPTY + [("at::TensorIteratorBase::allocate_or_resize_outputs()", "??"),
                          ("at::TensorIteratorBase::build(at::TensorIteratorConfig&)", "??"),
                          ("at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)", "??"),
                          ("torch::autograd::THPVariable_mul(_object*, _object*, _object*)", "python_variable_methods.cpp")],
    "copy": [("at::detail::empty_strided_cuda(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>)", "??"),
             ("at::native::_to_copy(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)", "??"),
             ("at::_ops::_to_copy::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)", "??"),
             ("torch::autograd::THPVariable_to(_object*, _object*, _object*)", "python_variable_methods.cpp")],
    "cat": EMPTY + [("at::(anonymous namespace)::structured_cat_out_cuda_functional::set_output_raw_strided(long, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions, c10::ArrayRef<at::Dimname>)", "RegisterCUDA.cpp"),
                    ("at::_ops::cat::call(c10::IListRef<at::Tensor> const&, long)", "??"),
                    ("torch::autograd::THPVariable_cat(_object*, _object*, _object*)", "python_torch_functions_0.cpp")],
    "sdpa": EMPTY + [("at::native::_flash_attention_forward(at::Tensor const&, at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&, long, long, double, bool, bool, std::optional<double>, std::optional<long>, std::optional<long>, std::optional<at::Tensor> const&, std::optional<at::Tensor> const&)", "??"),
                     ("at::_ops::_scaled_dot_product_flash_attention::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, double, bool, bool, std::optional<double>)", "??"),
                     ("torch::autograd::THPVariable_scaled_dot_product_attention(_object*, _object*, _object*)", "python_nn_functions.cpp")],
    "log_softmax": EMPTY + [("at::(anonymous namespace)::structured_log_softmax_cuda_out_functional::set_output_raw_strided(long, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions, c10::ArrayRef<at::Dimname>)", "RegisterCUDA.cpp"),
                            ("at::_ops::_log_softmax::call(at::Tensor const&, long, bool)", "??"),
                            ("at::native::cross_entropy_loss_symint(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, long, c10::SymInt, double)", "??"),
                            ("torch::autograd::THPVariable_cross_entropy_loss(_object*, _object*, _object*)", "python_nn_functions.cpp")],
    "foreach": EMPTY + [("at::native::foreach_tensor_sqrt_cuda(c10::ArrayRef<at::Tensor>)", "??"),
                        ("at::_ops::_foreach_sqrt::call(c10::ArrayRef<at::Tensor>)", "??"),
                        ("torch::autograd::THPVariable__foreach_sqrt(_object*, _object*, _object*)", "python_torch_functions_0.cpp")],
    "nccl": EMPTY + [("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
                     ("torch::autograd::THPVariable_empty(_object*, _object*, _object*)", "python_torch_functions_manual.cpp")],
    "graph": EMPTY + [("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
                      ("torch::inductor::AOTIPythonKernelHolder::operator()(c10::OperatorHandle const&, c10::DispatchKeySet, std::vector<c10::IValue, std::allocator<c10::IValue> >*)", "??")],
}
ENGINE_TAIL = [
    ("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", ""),
    ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", "??"),
    ("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??"),
    ("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "??"),
    ("torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "??"),
    ("execute_native_thread_routine", "thread48.o"),
    ("start_thread", "??"),
    ("clone", "??"),
]
MAIN_TAIL = [("PyEval_EvalCode", "??"), ("run_mod", ""), ("_PyRun_SimpleFileObject", ""), ("Py_RunMain", ""),
             ("Py_BytesMain", "??"), ("__libc_start_main", "??"), ("_start", "??")]
EVAL_FRAME = ("_PyEval_EvalFrameDefault", "??")


class Frames:
    def __init__(self, site_packages):
        self.site = site_packages
        self._cache = {}

    def frame(self, name, filename, line=0):
        key = (name, filename, line)
        f = self._cache.get(key)
        if f is None:
            f = {"name": name, "filename": filename, "line": line}
            self._cache[key] = f
        return f

    def lib(self, relpath):
        return self.site + "/" + relpath

    def stack(self, python, op="empty", engine_node=None, free=False):
        """python: [(filename, function, line)] outermost first. engine_node: the autograd Node
        whose apply allocated (the frame list of the engine's thread)."""
        out = [self.frame(n, f) for n, f in (FREE_PREFIX if free else ALLOC_PREFIX)]
        if not free:
            out += [self.frame(n, f) for n, f in OPS[op]]
        if engine_node is not None:
            if python:
                out.append(self.frame("torch::autograd::PyNode::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "python_function.cpp"))
                for filename, name, line in reversed(python):
                    out.append(self.frame(name, filename, line))
                    out.append(self.frame(*EVAL_FRAME))
            else:
                out.append(self.frame("torch::autograd::generated::%s::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)" % engine_node, "Functions.cpp"))
            out += [self.frame(n, f) for n, f in ENGINE_TAIL]
            return out
        for filename, name, line in reversed(python):
            out.append(self.frame(name, filename, line))
            out.append(self.frame(*EVAL_FRAME))
        out += [self.frame(n, f) for n, f in MAIN_TAIL]
        return out
