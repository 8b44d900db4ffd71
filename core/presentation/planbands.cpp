#include "core/presentation/planbands.h"

#include "core/presentation/labels.h"

namespace oomlens {

std::optional<Category> bandCategory(planner::Band band)
{
    switch (band) {
    case planner::Band::Parameters:
        return Category::Parameters;
    case planner::Band::Gradients:
        return Category::Gradients;
    case planner::Band::OptimizerState:
        return Category::OptimizerState;
    case planner::Band::Activations:
        return Category::Activations;
    case planner::Band::Temporaries:
        return Category::Temporaries;
    case planner::Band::KvCache:
        return Category::KvCache;
    case planner::Band::Overhead:
        break;
    }
    return std::nullopt;
}

std::string_view bandLabel(planner::Band band)
{
    const std::optional<Category> category = bandCategory(band);
    return category ? categoryLabel(*category) : "CUDA context and allocator slack";
}

} // namespace oomlens
