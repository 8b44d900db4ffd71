#include "core/oomtemplate.h"

#include "core/nametable.h"

namespace oomlens {

namespace {

constexpr NameTable<OomTemplate, 27> oomTemplateNames { {
    { OomTemplate::None, "" },
    { OomTemplate::T0, "T0" },
    { OomTemplate::T1, "T1" },
    { OomTemplate::T2, "T2" },
    { OomTemplate::T3, "T3" },
    { OomTemplate::T4, "T4" },
    { OomTemplate::Unknown, "unknown" },
    { OomTemplate::Cuda, "cuda" },
    { OomTemplate::Xpu, "xpu" },
    { OomTemplate::Npu, "npu" },
    { OomTemplate::Musa, "musa" },
    { OomTemplate::Mlu, "mlu" },
    { OomTemplate::Dpcpp, "dpcpp" },
    { OomTemplate::XpuBlockLimit, "xpu_block_limit" },
    { OomTemplate::Mps, "mps" },
    { OomTemplate::CudaMallocAsync, "cudaMallocAsync" },
    { OomTemplate::Xla, "xla" },
    { OomTemplate::Bfc, "bfc" },
    { OomTemplate::Tf, "tf" },
    { OomTemplate::HipRuntime, "hip_runtime" },
    { OomTemplate::CudaRuntime, "cuda_runtime" },
    { OomTemplate::CudaDriver, "cuda_driver" },
    { OomTemplate::Thc, "thc" },
    { OomTemplate::Cublas, "cublas" },
    { OomTemplate::Cudnn, "cudnn" },
    { OomTemplate::Cpu, "cpu" },
    { OomTemplate::LevelZero, "level_zero" },
} };

} // namespace

std::string_view oomTemplateName(OomTemplate id)
{
    return nameIn(oomTemplateNames, id);
}

std::string oomTemplateText(OomTemplate id)
{
    return std::string(oomTemplateName(id));
}

std::optional<OomTemplate> oomTemplateFromName(std::string_view name)
{
    return valueNamed(oomTemplateNames, name);
}

} // namespace oomlens
