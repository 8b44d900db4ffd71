#include "core/analysis/collectiveframework.h"

namespace oomlens {

const char* collectiveFrameworkText(CollectiveFramework framework)
{
    switch (framework) {
    case CollectiveFramework::Fsdp1:
        return "FSDP";
    case CollectiveFramework::Fsdp2:
        return "FSDP2";
    case CollectiveFramework::DeepSpeed:
        return "DeepSpeed ZeRO";
    case CollectiveFramework::Ddp:
        return "DDP";
    case CollectiveFramework::Megatron:
        return "Megatron-Core";
    case CollectiveFramework::Unknown:
        break;
    }
    return "";
}

} // namespace oomlens
