#include "core/runtimewords.h"

namespace oomlens {

namespace {

enum class Family { Cuda, Rocm, Xpu, Npu, Other };

Family familyOf(Backend backend)
{
    switch (backend) {
    case Backend::None: // a message without a backend word is CUDA's template
    case Backend::Cuda:
    case Backend::CudaRuntime:
    case Backend::Cublas:
    case Backend::Cudnn:
        return Family::Cuda;
    case Backend::Hip:
        return Family::Rocm;
    case Backend::Xpu:
        return Family::Xpu;
    case Backend::Npu:
        return Family::Npu;
    default:
        return Family::Other;
    }
}

// The parts each backend's rest of the card is made of. The keys name the role, not the product:
// they are the JSON's "key" and stay the same on every backend.
std::vector<RestOfCardPart> cudaParts()
{
    return {
        { "cuda_context", "CUDA context",
            "about 0.3–0.6 GiB per process and GPU with lazy module loading (the default since CUDA 11.7); 1–2 GiB "
            "or more with CUDA_MODULE_LOADING=EAGER",
            "every process that touches this GPU gets one: set the device before any CUDA call "
            "(torch.cuda.set_device(local_rank)) so ranks do not all open a context on GPU 0; keep "
            "CUDA_MODULE_LOADING=LAZY" },
        { "cublas_cudnn", "cuBLAS / cuDNN",
            "tens to a few hundred MiB of kernels loaded on first use; their workspaces (cuBLAS 4–32 MiB per handle "
            "and stream) come from PyTorch's allocator in recent releases and count as reserved",
            "torch.backends.cudnn.benchmark=True tries algorithms with large workspaces; CUBLAS_WORKSPACE_CONFIG "
            "sets cuBLAS's" },
        { "nccl", "NCCL buffers",
            "NCCL_BUFFSIZE (4 MiB) per channel and peer for every communicator: a few hundred MiB to over 1 GiB "
            "with many ranks or process groups, allocated with cudaMalloc outside PyTorch's cache",
            "NCCL_BUFFSIZE, NCCL_NCHANNELS_PER_NET_PEER / NCCL_MAX_NCHANNELS, fewer process groups (each "
            "new_group() is a communicator)" },
        { "other_libraries", "Other libraries' own allocations",
            "anything that calls cudaMalloc itself: CuPy's pool, TensorRT engines, JAX/XLA (preallocates 75% of the "
            "card by default), custom CUDA extensions",
            "XLA_PYTHON_CLIENT_PREALLOCATE=false for JAX beside PyTorch; the library's own memory pool settings" },
        { "other_processes", "Other processes",
            "each holds its own context (0.3 GiB or more) plus whatever it allocates",
            "nvidia-smi: a previous run or a notebook kernel still holding the card, DataLoader workers that touched "
            "CUDA, another job sharing the GPU" },
    };
}

// ROCm builds of PyTorch answer to torch.cuda; RCCL is NCCL's port and reads NCCL's variables.
std::vector<RestOfCardPart> rocmParts()
{
    return {
        { "cuda_context", "HIP context", "a few hundred MiB per process and GPU",
            "every process that touches this GPU gets one: set the device before any GPU call "
            "(torch.cuda.set_device(local_rank), which ROCm builds answer to) so ranks do not all open a context on "
            "GPU 0; HIP_VISIBLE_DEVICES limits what a process sees" },
        { "cublas_cudnn", "rocBLAS / hipBLASLt / MIOpen",
            "tens to a few hundred MiB of kernels loaded on first use; their workspaces come from PyTorch's "
            "allocator and count as reserved",
            "torch.backends.cudnn.benchmark=True makes MIOpen search algorithms with large workspaces" },
        { "nccl", "RCCL buffers",
            "buffers per channel and peer for every communicator (RCCL reads NCCL_BUFFSIZE, 4 MiB by default), "
            "allocated with hipMalloc outside PyTorch's cache",
            "NCCL_BUFFSIZE and NCCL_MAX_NCHANNELS (RCCL honours NCCL's names), fewer process groups (each "
            "new_group() is a communicator)" },
        { "other_libraries", "Other libraries' own allocations",
            "anything that calls hipMalloc itself: CuPy's pool on ROCm, JAX/XLA (preallocates 75% of the card by "
            "default), custom HIP extensions",
            "XLA_PYTHON_CLIENT_PREALLOCATE=false for JAX beside PyTorch; the library's own memory pool settings" },
        { "other_processes", "Other processes", "each holds its own context plus whatever it allocates",
            "rocm-smi --showpids (or amd-smi): a previous run or a notebook kernel still holding the card, "
            "DataLoader workers that touched the GPU, another job sharing it" },
    };
}

std::vector<RestOfCardPart> xpuParts()
{
    return {
        { "cuda_context", "Level Zero context", "a few hundred MiB per process and device",
            "every process that touches this device gets one: set it before the first XPU call "
            "(torch.xpu.set_device(local_rank)); ZE_AFFINITY_MASK limits what a process sees" },
        { "cublas_cudnn", "oneDNN / oneMKL", "kernels compiled and loaded on first use, tens to hundreds of MiB",
            "a fixed cost per process; fewer distinct shapes compile fewer kernels" },
        { "nccl", "oneCCL buffers", "buffers for every communicator, allocated outside PyTorch's cache",
            "fewer process groups (each new_group() is a communicator)" },
        { "other_libraries", "Other libraries' own allocations",
            "anything that allocates device memory through SYCL or Level Zero itself: another framework's pool, "
            "custom SYCL extensions",
            "the library's own memory pool settings" },
        { "other_processes", "Other processes", "each holds its own context plus whatever it allocates",
            "xpu-smi: a previous run or a notebook kernel still holding the device, another job sharing it" },
    };
}

std::vector<RestOfCardPart> npuParts()
{
    return {
        { "cuda_context", "CANN runtime context", "a few hundred MiB per process and device",
            "every process that touches this NPU gets one: set the device before the first NPU call "
            "(torch.npu.set_device(local_rank)); ASCEND_RT_VISIBLE_DEVICES limits what a process sees" },
        { "cublas_cudnn", "CANN operator kernels", "kernels loaded on first use, tens to hundreds of MiB",
            "a fixed cost per process" },
        { "nccl", "HCCL buffers",
            "HCCL_BUFFSIZE (200 MB by default) for every communicator, allocated outside PyTorch's cache",
            "HCCL_BUFFSIZE, fewer process groups (each new_group() is a communicator)" },
        { "other_libraries", "Other libraries' own allocations",
            "anything that allocates device memory through the CANN runtime itself", "the library's own settings" },
        { "other_processes", "Other processes", "each holds its own context plus whatever it allocates",
            "npu-smi info: a previous run still holding the device, another job sharing it" },
    };
}

// A backend whose runtime the inputs do not name well enough to list its libraries.
std::vector<RestOfCardPart> otherParts()
{
    return {
        { "cuda_context", "The runtime's context", "a few hundred MiB per process and device",
            "every process that touches this device gets one: set the device before its first use" },
        { "cublas_cudnn", "Math library kernels", "loaded on first use, tens to hundreds of MiB",
            "a fixed cost per process" },
        { "nccl", "Collective library buffers", "buffers for every communicator, outside PyTorch's cache",
            "fewer process groups (each new_group() is a communicator)" },
        { "other_libraries", "Other libraries' own allocations",
            "anything that allocates device memory itself, outside PyTorch", "the library's own settings" },
        { "other_processes", "Other processes", "each holds its own context plus whatever it allocates",
            "the vendor's device monitor: a previous run still holding the device, another job sharing it" },
    };
}

} // namespace

RuntimeWords runtimeWords(Backend backend)
{
    switch (familyOf(backend)) {
    case Family::Cuda:
        return { "CUDA context", "cuBLAS/cuDNN", "NCCL", "nvidia-smi" };
    case Family::Rocm:
        return { "HIP context", "rocBLAS/MIOpen", "RCCL", "rocm-smi" };
    case Family::Xpu:
        return { "Level Zero context", "oneDNN/oneMKL", "oneCCL", "xpu-smi" };
    case Family::Npu:
        return { "CANN runtime context", "CANN kernels", "HCCL", "npu-smi" };
    case Family::Other:
        break;
    }
    return { "runtime context", "math libraries", "collective libraries", "the device monitor" };
}

std::string outsideCacheHolders(Backend backend)
{
    const RuntimeWords words = runtimeWords(backend);
    return std::string(words.context) + ", " + std::string(words.mathLibraries) + " kernels, "
        + std::string(words.collectives) + " buffers, other libraries";
}

std::vector<RestOfCardPart> restOfCardParts(Backend backend)
{
    switch (familyOf(backend)) {
    case Family::Cuda:
        return cudaParts();
    case Family::Rocm:
        return rocmParts();
    case Family::Xpu:
        return xpuParts();
    case Family::Npu:
        return npuParts();
    case Family::Other:
        break;
    }
    return otherParts();
}

} // namespace oomlens
