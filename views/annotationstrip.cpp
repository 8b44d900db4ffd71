#include "views/annotationstrip.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>

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
    std::array<int, maxRows> paintedTo;
    paintedTo.fill(INT_MIN);
    for (const Bar& bar : m_bars) {
        if (bar.upper < range.lower || bar.lower > range.upper)
            continue;
        const int row = std::min(bar.depth, maxRows - 1);
        const double x0 = std::max(axis->coordToPixel(bar.lower), double(rect->left()));
        const double x1 = std::min(axis->coordToPixel(bar.upper), double(rect->right()));
        // Bars thinner than a pixel that land where this row is already painted add nothing.
        if (int(std::floor(x1)) <= paintedTo[size_t(row)])
            continue;
        paintedTo[size_t(row)] = int(std::floor(std::max(x1, x0 + 1)));
        const QRectF box(x0, rect->top() + 2 + row * rowHeight, std::max(1.0, x1 - x0), rowHeight - 3);
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
