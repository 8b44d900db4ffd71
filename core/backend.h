#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// Which device or library an OOM message came from. The JSON, the report and the text output spell
// it with backendName ("cuda", "cuda_runtime"); the code compares the enum, so a typo cannot compile.
enum class Backend {
    None, // not said: no message, or one built by hand; printed as ""
    Cuda,
    Hip,
    Xpu, // Intel GPUs: XPU, IPEX's DPCPP, Level Zero
    Npu, // Ascend
    Musa, // Moore Threads
    Mlu, // Cambricon
    Mps, // Apple
    Xla,
    Tf,
    CudaRuntime, // a CUDA runtime or driver call failed, not the caching allocator
    Cublas,
    Cudnn,
    Cpu,
};

std::string_view backendName(Backend backend);
// For string concatenation in explanations and report lines.
std::string backendText(Backend backend);
std::optional<Backend> backendFromName(std::string_view name);

} // namespace oomlens
