#include "views/plots/phaseshading.h"

#include "views/categorycolors.h"
#include "views/plots/spanpixels.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace oomlens {

PhaseShading::PhaseShading(QCustomPlot* plot)
    : QCPAbstractItem(plot)
{
    setSelectable(false);
}

void PhaseShading::setRuns(std::vector<Run> runs)
{
    m_runs = std::move(runs);
}

double PhaseShading::selectTest(const QPointF&, bool, QVariant*) const
{
    return -1;
}

void PhaseShading::draw(QCPPainter* painter)
{
    m_lastDrawn = 0;
    QCPAxisRect* rect = clipAxisRect();
    if (!rect || m_runs.empty())
        return;
    QCPAxis* axis = rect->axis(QCPAxis::atBottom);
    const QCPRange range = axis->range();
    std::array<QColor, phaseCount> colors;
    for (size_t p = 0; p < colors.size(); ++p)
        colors[p] = colors::phaseShade(Phase(p));
    const bool vector = painter->modes().testFlag(QCPPainter::pmVectorized);
    // On screen: one row of pixels, stretched to the plot's height in a single drawImage, instead
    // of one tall translucent fillRect per run.
    const double scale = vector ? 1.0 : painter->device()->devicePixelRatioF() * painter->transform().m11();
    const int width = int(std::ceil(rect->width() * scale));
    QImage strip;
    if (!vector) {
        strip = QImage(std::max(1, width), 1, QImage::Format_ARGB32_Premultiplied);
        strip.fill(Qt::transparent);
    } else {
        painter->setPen(Qt::NoPen);
    }
    auto* pixels = vector ? nullptr : reinterpret_cast<QRgb*>(strip.scanLine(0));

    auto it = std::lower_bound(
        m_runs.begin(), m_runs.end(), range.lower, [](const Run& run, double key) { return run.upper < key; });
    // Columns of the strip (device pixels on screen); a run thinner than a column still gets one.
    SpanPixels columns(axis, rect->left(), scale, 0, width, SpanPixels::Keep::NewColumn);
    for (; it != m_runs.end() && it->lower <= range.upper; ++it) {
        if (it->phase == Phase::Unknown)
            continue;
        const auto placed = columns.place(it->lower, it->upper);
        if (!placed)
            continue;
        const QColor& color = colors[size_t(it->phase)];
        if (vector) {
            painter->fillRect(
                QRectF(rect->left() + placed->x0, rect->top(), std::max(1.0, placed->x1 - placed->x0), rect->height()),
                color);
        } else {
            const QRgb rgb = qPremultiply(color.rgba());
            for (int x = placed->freshColumn; x < placed->endColumn; ++x)
                pixels[x] = rgb;
        }
        ++m_lastDrawn;
    }
    if (!vector)
        painter->drawImage(QRectF(rect->left(), rect->top(), rect->width(), rect->height()), strip);
}

} // namespace oomlens
