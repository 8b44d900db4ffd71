#pragma once

#include "core/backend.h"

#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// What a backend's own runtime calls the things that fill a card besides PyTorch's cache: an AMD
// card has a HIP context, rocBLAS and RCCL, not a CUDA context, cuBLAS and NCCL; an Intel one a
// Level Zero context and oneCCL. Every sentence about "the rest of the card" takes its words here,
// so an input is answered in the terms of the backend it came from.
struct RuntimeWords
{
    std::string_view context; // "CUDA context"
    std::string_view mathLibraries; // "cuBLAS/cuDNN"
    std::string_view collectives; // "NCCL"
    std::string_view processTool; // "nvidia-smi"
};

RuntimeWords runtimeWords(Backend backend);

// "CUDA context, cuBLAS/cuDNN kernels, NCCL buffers, other libraries": what a process holds on
// the card outside PyTorch's cache, in the backend's words.
std::string outsideCacheHolders(Backend backend);

// What usually fills the rest of the card (what PyTorch's allocator does not own), one entry per
// holder, with its usual size and what to check, on this backend.
struct RestOfCardPart
{
    std::string key; // "cuda_context", "cublas_cudnn", "nccl", "other_libraries", "other_processes"
    std::string name;
    std::string typicalSize;
    std::string whatToCheck;
};

std::vector<RestOfCardPart> restOfCardParts(Backend backend);

} // namespace oomlens
