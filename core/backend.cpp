#include "core/backend.h"

#include "core/nametable.h"

namespace oomlens {

namespace {

constexpr NameTable<Backend, 14> backendNames { {
    { Backend::None, "" },
    { Backend::Cuda, "cuda" },
    { Backend::Hip, "hip" },
    { Backend::Xpu, "xpu" },
    { Backend::Npu, "npu" },
    { Backend::Musa, "musa" },
    { Backend::Mlu, "mlu" },
    { Backend::Mps, "mps" },
    { Backend::Xla, "xla" },
    { Backend::Tf, "tf" },
    { Backend::CudaRuntime, "cuda_runtime" },
    { Backend::Cublas, "cublas" },
    { Backend::Cudnn, "cudnn" },
    { Backend::Cpu, "cpu" },
} };

} // namespace

std::string_view backendName(Backend backend)
{
    return nameIn(backendNames, backend);
}

std::string backendText(Backend backend)
{
    return std::string(backendName(backend));
}

std::optional<Backend> backendFromName(std::string_view name)
{
    return valueNamed(backendNames, name);
}

} // namespace oomlens
