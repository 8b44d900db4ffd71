#pragma once

#include "core/textinputs.h"

#include <string_view>

namespace oomlens::text {

// The message families we recognise; each has its own field layout.
enum class OomFamily : uint8_t {
    Caching, // "CUDA/HIP/XPU/DPCPP/NPU/MUSA out of memory. Tried to allocate ..." (T0-T4 and kin)
    Mps, // "MPS backend out of memory (...)"
    MallocAsync, // "Allocation on device N would exceed allowed memory. (out of memory)" + lines
    CudaRuntime, // "CUDA error: out of memory", "HIP error: out of memory"
    CudaDriver, // "CUDA driver error: out of memory"
    Thc, // Lua Torch / THC: "cuda runtime error (2) : out of memory"
    Cublas, // "CUBLAS_STATUS_ALLOC_FAILED"
    Cudnn, // "CUDNN_STATUS_NOT_SUPPORTED" and friends
    Xla, // "RESOURCE_EXHAUSTED: Out of memory while trying to allocate ..."
    Tf, // "OOM when allocating tensor with shape[...]"
    Cpu, // "DefaultCPUAllocator: can't allocate memory"
    LevelZero, // "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"
    Bfc, // TF/XLA BFC allocator log: "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.97GiB"
};

// Fills the fields of `message` from `body`, the whitespace-normalized message starting at the
// family's anchor phrase (exception class already removed). `message.exception` should be set
// before the call: it narrows the version hint. Missing fields stay empty and set `truncated`.
void parseOomFields(OomFamily family, std::string_view body, OomMessage& message);

// The boilerplate lines after "CUDA error: out of memory" date the build ("TORCH_USE_CUDA_DSA" is 2.0+,
// "API call,so" without a space is older).
void refineFromRuntimeTail(std::string_view tail, OomMessage& message);

// Whether `body` already holds the family's whole message; used to decide whether the next
// line of the input is a continuation of a re-wrapped message.
bool oomMessageComplete(OomFamily family, std::string_view body);

// Where the message proper ends in `body` (trailing log text after it is not part of it), or npos
// when the family's closing words are not there.
size_t oomMessageEnd(OomFamily family, std::string_view body);

// True when `body` stops in the middle of a word of the family's fixed wording: the paste was
// cut there, as opposed to a user leaving out the hint after a complete sentence or word.
bool endsMidWord(OomFamily family, std::string_view body);

} // namespace oomlens::text
