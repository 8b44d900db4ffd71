#include "core/presentation/labels.h"

namespace oomlens {

std::string_view categoryLabel(Category category)
{
    switch (category) {
    case Category::Parameters:
        return "Parameters";
    case Category::Gradients:
        return "Gradients";
    case Category::OptimizerState:
        return "Optimizer state";
    case Category::Activations:
        return "Activations";
    case Category::Temporaries:
        return "Temporaries";
    case Category::Inputs:
        return "Inputs";
    case Category::Communication:
        return "Communication";
    case Category::KvCache:
        return "KV cache";
    case Category::Unknown:
        break;
    }
    return "Unknown";
}

bool listedWhenEmpty(Category category)
{
    return category != Category::Communication && category != Category::KvCache;
}

std::string_view inputKindLabel(InputKind kind)
{
    switch (kind) {
    case InputKind::Snapshot:
        return "Memory snapshot";
    case InputKind::OomMessage:
        return "OOM message";
    case InputKind::MemorySummary:
        return "memory_summary()";
    case InputKind::Traceback:
        return "Traceback";
    case InputKind::NvidiaSmi:
        return "nvidia-smi";
    case InputKind::Log:
        return "Log";
    case InputKind::Sidecar:
        return "Capture sidecar";
    case InputKind::ModelConfig:
        return "Model config.json";
    case InputKind::ProfilerTimeline:
        return "torch.profiler memory timeline";
    case InputKind::Unknown:
        break;
    }
    return "Unrecognized";
}

} // namespace oomlens
