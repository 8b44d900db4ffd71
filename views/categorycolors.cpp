#include "views/categorycolors.h"

#include "core/presentation/palette.h"

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
    const Rgb rgb = categoryColor(category, darkPalette() ? Theme::Dark : Theme::Light);
    return QColor(rgb.red, rgb.green, rgb.blue);
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
    // An RL iteration's own stages: the engine's generation in teal, the forward-only passes of the
    // reference and reward models beside evaluation's green, moving memory in warm greys.
    case Phase::Rollout:
        color = QColor(0x16, 0x9c, 0x9c);
        break;
    case Phase::Reference:
    case Phase::Reward:
        color = QColor(0x7a, 0xa8, 0x2e);
        break;
    case Phase::WeightSync:
        color = QColor(0xc0, 0x39, 0x6b);
        break;
    case Phase::Sleep:
    case Phase::Wake:
    case Phase::Offload:
    case Phase::Reload:
        color = QColor(0x9a, 0x84, 0x5c);
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
