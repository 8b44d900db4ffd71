#include "views/categorycolors.h"

#include <QApplication>
#include <QPalette>

#include <array>

namespace oomlens::colors {

bool darkPalette()
{
    const QPalette palette = QApplication::palette();
    return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

namespace {

std::array<QColor, categoryCount>& overrides()
{
    static std::array<QColor, categoryCount> colors;
    return colors;
}

} // namespace

void setCategoryOverride(Category category, const QColor& color)
{
    overrides()[size_t(category)] = color;
}

QColor category(Category category)
{
    const QColor chosen = overrides()[size_t(category)];
    return chosen.isValid() ? chosen : defaultCategory(category);
}

QColor defaultCategory(Category category)
{
    // Fixed state (parameters, gradients, optimizer) in cool tones, per-step memory in warm ones,
    // so the "what cannot shrink" part reads as one block at a glance.
    const bool dark = darkPalette();
    switch (category) {
    case Category::Parameters:
        return dark ? QColor(0x5b, 0x9b, 0xd5) : QColor(0x2f, 0x6f, 0xb3);
    case Category::Gradients:
        return dark ? QColor(0x4f, 0xc1, 0xc9) : QColor(0x1f, 0x9a, 0xa3);
    case Category::OptimizerState:
        return dark ? QColor(0x9d, 0x86, 0xe0) : QColor(0x6c, 0x52, 0xb8);
    case Category::Activations:
        return dark ? QColor(0xf2, 0x9b, 0x4c) : QColor(0xe3, 0x7b, 0x22);
    case Category::Temporaries:
        return dark ? QColor(0xf0, 0xc8, 0x5a) : QColor(0xd9, 0xa4, 0x1b);
    case Category::Inputs:
        return dark ? QColor(0x7d, 0xc9, 0x6b) : QColor(0x4c, 0x9a, 0x3b);
    case Category::Unknown:
        break;
    }
    return dark ? QColor(0x90, 0x90, 0x98) : QColor(0x9a, 0x9a, 0xa2);
}

QColor phaseShade(Phase phase)
{
    QColor color;
    switch (phase) {
    case Phase::Forward:
        color = QColor(0xe3, 0x7b, 0x22);
        break;
    case Phase::Backward:
        color = QColor(0x2f, 0x6f, 0xb3);
        break;
    case Phase::Optimizer:
        color = QColor(0x6c, 0x52, 0xb8);
        break;
    case Phase::Eval:
        color = QColor(0x4c, 0x9a, 0x3b);
        break;
    case Phase::Load:
    case Phase::Data:
        color = QColor(0x80, 0x80, 0x80);
        break;
    case Phase::Unknown:
        return Qt::transparent;
    }
    color.setAlpha(darkPalette() ? 40 : 28);
    return color;
}

QColor reservedLine()
{
    return darkPalette() ? QColor(0xe0, 0xe0, 0xe6) : QColor(0x30, 0x30, 0x38);
}

QColor peakMarker()
{
    return darkPalette() ? QColor(0xff, 0xd0, 0x40) : QColor(0xb0, 0x70, 0x00);
}

QColor oomMarker()
{
    return darkPalette() ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc6, 0x28, 0x28);
}

QColor freeBlock()
{
    return darkPalette() ? QColor(0x3a, 0x3a, 0x42) : QColor(0xe4, 0xe4, 0xea);
}

} // namespace oomlens::colors
