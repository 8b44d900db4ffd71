#pragma once

#include <QPalette>
#include <QString>

class QCPAxis;
class QCustomPlot;

namespace oomlens {

// The timeline's look for the smaller charts (Compare, Job): the palette's base behind, its text
// colour on the axes, a faint dotted grid; called again on a palette change.
void stylePlot(QCustomPlot* plot, const QPalette& palette);

// One axis in that look, for a chart with more axes than the two stylePlot colours.
void styleAxis(QCPAxis* axis, const QPalette& palette);

// "■ Activations  ■ Temporaries …" in the category colours, for a QLabel under a chart.
QString categoryLegendHtml();

} // namespace oomlens
