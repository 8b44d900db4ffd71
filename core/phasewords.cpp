#include "core/phasewords.h"

#include "core/strings.h"

namespace oomlens {

std::string_view phaseLabel(Phase phase)
{
    switch (phase) {
    case Phase::Load:
        return "Loading";
    case Phase::Forward:
        return "Forward";
    case Phase::Backward:
        return "Backward";
    case Phase::Optimizer:
        return "Optimizer step";
    case Phase::Eval:
        return "Evaluation";
    case Phase::Data:
        return "Data loading";
    case Phase::Rollout:
        return "Rollout";
    case Phase::Reference:
        return "Reference pass";
    case Phase::Reward:
        return "Reward pass";
    case Phase::WeightSync:
        return "Weight sync";
    case Phase::Sleep:
        return "Sleep";
    case Phase::Wake:
        return "Wake-up";
    case Phase::Offload:
        return "Offload";
    case Phase::Reload:
        return "Reload";
    case Phase::Unknown:
        break;
    }
    return "Unknown";
}

std::string phaseInSentence(Phase phase)
{
    return lowercase(phaseLabel(phase));
}

} // namespace oomlens
