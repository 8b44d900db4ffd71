#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// The wording of an OOM message (formats.md §2): which PyTorch era or which library printed it.
// Printed with oomTemplateName ("T3", "cudaMallocAsync"); compared as the enum.
enum class OomTemplate {
    None, // not said: printed as ""
    T0, // "... cached)": PyTorch 1.3 and older
    T1, // "... reserved in total by PyTorch)": 1.4-2.0
    T2, // "total capacty of": 2.1's typo
    T3, // "GPU 0 has a total capacity of ...": 2.2-2.7
    T4, // T3 with the docs.pytorch.org link: 2.8+
    Unknown, // a CUDA/HIP caching-allocator message cut before its era shows
    // A caching-allocator message cut early (or a vendor's copy of T1) is named after its backend.
    Cuda,
    Xpu,
    Npu,
    Musa,
    Mlu,
    Dpcpp, // old IPEX
    XpuBlockLimit, // IPEX's 4 GB per-allocation limit
    Mps,
    CudaMallocAsync,
    Xla,
    Bfc, // TF/XLA BFC allocator log line
    Tf,
    HipRuntime,
    CudaRuntime,
    CudaDriver,
    Thc, // Lua Torch / THC
    Cublas,
    Cudnn,
    Cpu,
    LevelZero,
};

std::string_view oomTemplateName(OomTemplate id);
// For string concatenation in explanations and report lines.
std::string oomTemplateText(OomTemplate id);
std::optional<OomTemplate> oomTemplateFromName(std::string_view name);

} // namespace oomlens
