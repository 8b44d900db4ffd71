#pragma once

#include "core/phase.h"
#include "core/presentation/palette.h"

#include <QColor>

namespace oomlens {

// Colours for categories and phases, chosen for the current palette so bands stay
// readable in dark mode; recomputed on QEvent::PaletteChange by the widgets using them.
namespace colors {

QColor category(Category category);
// The built-in colour for the current palette, ignoring the user's choice.
QColor defaultCategory(Category category);
// A user's colour for a category (Settings); an invalid colour restores the default.
void setCategoryOverride(Category category, const QColor& color);
QColor phaseShade(Phase phase);
QColor cardBand(CardBandKind kind);
QColor fromRgb(Rgb rgb);
QColor reservedLine();
QColor peakMarker();
QColor oomMarker();
QColor freeBlock();
bool darkPalette();

} // namespace colors

} // namespace oomlens
