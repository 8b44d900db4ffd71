#include "core/presentation/cardwords.h"

namespace oomlens {

std::string_view cardViewLabel(CardFigure::View view)
{
    switch (view) {
    case CardFigure::View::Allocator:
        return "PyTorch's allocator";
    case CardFigure::View::Process:
        return "This process";
    case CardFigure::View::Card:
        return "The card";
    }
    return "The card";
}

std::string_view cardViewName(CardFigure::View view)
{
    switch (view) {
    case CardFigure::View::Allocator:
        return "allocator";
    case CardFigure::View::Process:
        return "process";
    case CardFigure::View::Card:
        return "card";
    }
    return "card";
}

} // namespace oomlens
