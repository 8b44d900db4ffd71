#pragma once

#include "core/phase.h"

#include <QColor>

namespace oomlens {

// Colours for categories and phases, chosen for the current palette so bands stay
// readable in dark mode; recomputed on QEvent::PaletteChange by the widgets using them.
namespace colors {

QColor category(Category category);
QColor phaseShade(Phase phase);
QColor reservedLine();
QColor peakMarker();
QColor oomMarker();
QColor freeBlock();
bool darkPalette();

} // namespace colors

} // namespace oomlens
