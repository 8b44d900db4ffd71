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

QColor fromRgb(Rgb rgb)
{
    return QColor(rgb.red, rgb.green, rgb.blue);
}

QColor defaultCategory(Category category)
{
    return fromRgb(categoryColor(category, darkPalette() ? Theme::Dark : Theme::Light));
}

QColor phaseShade(Phase phase)
{
    const std::optional<Rgb> rgb = phaseColor(phase);
    if (!rgb)
        return Qt::transparent;
    QColor color = fromRgb(*rgb);
    color.setAlpha(darkPalette() ? 40 : 28);
    return color;
}

QColor cardBand(CardBandKind kind)
{
    return fromRgb(cardBandColor(kind));
}

namespace {

QColor mark(Mark which)
{
    return fromRgb(markColor(which, darkPalette() ? Theme::Dark : Theme::Light));
}

} // namespace

QColor reservedLine()
{
    return mark(Mark::ReservedLine);
}

QColor peakMarker()
{
    return mark(Mark::PeakMarker);
}

QColor oomMarker()
{
    return mark(Mark::OomMarker);
}

QColor freeBlock()
{
    return mark(Mark::FreeBlock);
}

} // namespace oomlens::colors
