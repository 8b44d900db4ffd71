#include "views/plots/annotationstrip.h"

#include "views/plots/spanpixels.h"

#include <algorithm>

namespace oomlens {

AnnotationStrip::AnnotationStrip(QCustomPlot* plot)
    : QCPAbstractItem(plot)
{
    setSelectable(false);
}

void AnnotationStrip::setBars(std::vector<Bar> bars)
{
    m_bars = std::move(bars);
}

double AnnotationStrip::selectTest(const QPointF&, bool, QVariant*) const
{
    return -1;
}

void AnnotationStrip::draw(QCPPainter* painter)
{
    m_lastDrawn = 0;
    QCPAxisRect* rect = clipAxisRect();
    if (!rect || m_bars.empty())
        return;
    QCPAxis* axis = rect->axis(QCPAxis::atBottom);
    const QCPRange range = axis->range();
    const QColor text = mParentPlot->palette().color(QPalette::WindowText);
    QColor fill = mParentPlot->palette().color(QPalette::Highlight);
    fill.setAlpha(60);
    QColor edge = fill;
    edge.setAlpha(170);
    const QFontMetricsF metrics(painter->font());
    // One lane per row, in the widget's pixels.
    SpanPixels columns(axis, 0, 1, rect->left(), rect->right(), SpanPixels::Keep::EndPastPainted, maxRows);
    for (const Bar& bar : m_bars) {
        if (bar.upper < range.lower || bar.lower > range.upper)
            continue;
        const int row = std::min(bar.depth, maxRows - 1);
        const auto placed = columns.place(bar.lower, bar.upper, row);
        if (!placed)
            continue;
        const QRectF box(
            placed->x0, rect->top() + 2 + row * rowHeight, std::max(1.0, placed->x1 - placed->x0), rowHeight - 3);
        painter->setPen(bar.closed ? QPen(edge) : QPen(edge, 1, Qt::DashLine));
        painter->setBrush(fill);
        painter->drawRect(box);
        ++m_lastDrawn;
        if (box.width() > metrics.horizontalAdvance(bar.label) + 6) {
            painter->setPen(text);
            painter->drawText(box.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, bar.label);
        }
    }
}

} // namespace oomlens
