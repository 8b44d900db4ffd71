#include "core/phase.h"

#include <array>

namespace oomlens {

namespace {
constexpr std::array<std::string_view, 7> phaseNames
    = { "unknown", "load", "forward", "backward", "optimizer", "eval", "data" };
constexpr std::array<std::string_view, categoryCount> categoryNames = { "parameters", "gradients", "optimizer_state",
    "activations", "temporaries", "inputs", "communication", "kv_cache", "unknown" };
} // namespace

std::string_view phaseName(Phase phase)
{
    return phaseNames[static_cast<size_t>(phase)];
}

Phase phaseFromName(std::string_view name)
{
    for (size_t i = 0; i < phaseNames.size(); ++i) {
        if (phaseNames[i] == name)
            return static_cast<Phase>(i);
    }
    return Phase::Unknown;
}

std::string_view categoryName(Category category)
{
    return categoryNames[static_cast<size_t>(category)];
}

Category categoryFromName(std::string_view name)
{
    for (size_t i = 0; i < categoryNames.size(); ++i) {
        if (categoryNames[i] == name)
            return static_cast<Category>(i);
    }
    return Category::Unknown;
}

} // namespace oomlens
