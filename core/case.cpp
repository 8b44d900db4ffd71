#include "core/case.h"

#include <array>

namespace oomlens {

std::string_view inputKindName(InputKind kind)
{
    static constexpr std::array<std::string_view, 10> names = { "snapshot", "oom_message", "memory_summary",
        "traceback", "nvidia_smi", "log", "unknown", "sidecar", "model_config", "profiler_timeline" };
    return names[static_cast<size_t>(kind)];
}

} // namespace oomlens
