"""Call stacks as the snapshot records them: innermost frame first.

Two styles, as `_record_memory_history(stacks=...)` gives them:
  * "python": Python frames only; allocations made by the autograd engine's device thread have
    no Python frames at all (an empty list);
  * "all": C++ frames of the allocator and the ATen operator first, then the Python frames, each
    followed by the CPython evaluation frame that ran it, then the interpreter's entry frames.
Frame dicts are shared objects, as in PyTorch's builder, so the pickle memoizes them.
"""


class Stacks:
    def __init__(self, style, site, script, python="3.10"):
        self.style = style
        self.site = site  # "/opt/conda/lib/python3.10/site-packages"
        self.script = script
        self.python = python
        self.context = []  # outermost first: (filename, line, name)
        self._frames = {}
        self._lists = {}

    def frame(self, filename, line, name):
        key = (filename, line, name)
        found = self._frames.get(key)
        if found is None:
            found = {"filename": filename, "line": line, "name": name}
            self._frames[key] = found
        return found

    def torch(self, relative, line, name):
        return (self.site + "/torch/" + relative, line, name)

    def lib(self, relative, line, name):
        return (self.site + "/" + relative, line, name)

    def user(self, line, name, filename=None):
        return (filename or self.script, line, name)

    def push(self, *frames):
        self.context.extend(frames)

    def pop(self, count=1):
        del self.context[-count:]

    def _shared(self, frames):
        key = tuple(id(f) for f in frames)
        found = self._lists.get(key)
        if found is None:
            found = frames
            self._lists[key] = found
        return found

    def here(self, python_tail=(), cpp_op=None):
        """The stack of an allocation made now: context + python_tail (outermost first)."""
        chain = list(self.context) + list(python_tail)
        python = [self.frame(*f) for f in reversed(chain)]
        if self.style == "python":
            return self._shared(python)
        out = [self.frame("??", 0, n) for n in (
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
            "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)",
            "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)")]
        out.append(self.frame("??", 0, "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)"))
        for op in (cpp_op or ["at::native::empty_cuda"]):
            out.append(self.frame("??", 0, op))
        out.append(self.frame("python_variable_methods.cpp", 0, "torch::autograd::THPVariable_call"))
        for f in python:
            out.append(f)
            out.append(self.frame("/usr/local/src/conda/python-" + self.python + "/Python/ceval.c", 0, "_PyEval_EvalFrameDefault"))
        out.append(self.frame("/usr/local/src/conda/python-" + self.python + "/Modules/main.c", 0, "Py_RunMain"))
        out.append(self.frame("??", 0, "__libc_start_main"))
        out.append(self.frame("??", 0, "_start"))
        return self._shared(out)

    def engine(self, node):
        """An allocation made by the autograd engine's device thread while running `node`."""
        if self.style == "python":
            return self._shared([])
        names = [
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
            "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
            "at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)",
            "at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
            "torch::autograd::generated::" + node + "::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
            "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
            "torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&)",
            "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)",
            "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
            "torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
            "torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
            "execute_native_thread_routine",
            "start_thread",
            "clone",
        ]
        return self._shared([self.frame("??", 0, n) for n in names])
