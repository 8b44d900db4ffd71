#include "views/plots/stackedbands.h"

#include <algorithm>
#include <cmath>

namespace oomlens {

StackedBands::StackedBands(QCPAxis* keyAxis, QCPAxis* valueAxis)
    : QCPAbstractPlottable(keyAxis, valueAxis)
{
    setAntialiased(false);
    setAntialiasedFill(false);
    setSelectable(QCP::stNone);
}

void StackedBands::setData(std::vector<double> keys, std::vector<Tops> tops)
{
    m_keys = std::move(keys);
    m_tops = std::move(tops);
    m_tops.resize(m_keys.size());
}

void StackedBands::clearData()
{
    setData({}, {});
}

void StackedBands::setColors(const std::array<QColor, bandCount>& fills, const QColor& outline)
{
    m_fills = fills;
    m_outline = outline;
}

double StackedBands::topAt(double key) const
{
    const auto it = std::upper_bound(m_keys.begin(), m_keys.end(), key);
    if (it == m_keys.begin())
        return 0;
    return m_tops[size_t(it - m_keys.begin()) - 1].back();
}

double StackedBands::selectTest(const QPointF&, bool, QVariant*) const
{
    return -1;
}

QCPRange StackedBands::getKeyRange(bool& foundRange, QCP::SignDomain) const
{
    foundRange = !m_keys.empty();
    return foundRange ? QCPRange(m_keys.front(), m_keys.back()) : QCPRange();
}

QCPRange StackedBands::getValueRange(bool& foundRange, QCP::SignDomain, const QCPRange&) const
{
    foundRange = !m_tops.empty();
    double top = 0;
    for (const Tops& tops : m_tops)
        top = std::max(top, tops.back());
    return QCPRange(0, top);
}

void StackedBands::draw(QCPPainter* painter)
{
    QCPAxis* keys = keyAxis();
    QCPAxis* values = valueAxis();
    if (!keys || !values || m_keys.empty())
        return;
    const QRect clip = clipRect();
    // On screen the columns are written straight into one image: thousands of tall fillRects
    // would each be a separate (and, in Qt 6, thread-pooled) span fill. Vector exports get
    // real rectangles.
    const bool vector = painter->modes().testFlag(QCPPainter::pmVectorized);
    const double scale = vector ? 1.0 : painter->device()->devicePixelRatioF() * painter->transform().m11();
    std::array<QRgb, bandCount> fills {};
    QRgb outline = 0;
    uchar* bits = nullptr;
    qsizetype stride = 0;
    int imageWidth = 0, imageHeight = 0;
    if (!vector) {
        // Reused between redraws: a fresh multi-megabyte image per frame costs page faults.
        const QSize size(int(std::ceil(clip.width() * scale)), int(std::ceil(clip.height() * scale)));
        if (m_image.size() != size)
            m_image = QImage(size, QImage::Format_ARGB32_Premultiplied);
        m_image.setDevicePixelRatio(1.0);
        m_image.fill(Qt::transparent);
        // Raw rows: QImage::scanLine() checks for a detach on every call, which at one call per
        // row per column was most of the redraw time.
        bits = m_image.bits();
        stride = m_image.bytesPerLine();
        imageWidth = m_image.width();
        imageHeight = m_image.height();
        for (size_t band = 0; band < fills.size(); ++band)
            fills[band] = qPremultiply(m_fills[band].rgba());
        outline = qPremultiply(m_outline.rgba());
    } else {
        painter->setPen(Qt::NoPen);
    }
    // Device pixel rows, relative to the image, of a value.
    auto row = [&](double value) { return (values->coordToPixel(value) - clip.top()) * scale; };
    auto fill = [&](int x0, int x1, double top, double bottom, int band) {
        if (vector) {
            const QColor& color = band < 0 ? m_outline : m_fills[size_t(band)];
            painter->fillRect(QRectF(clip.left() + x0, clip.top() + top, x1 - x0, bottom - top), color);
            return;
        }
        const int y0 = std::clamp(int(std::lround(top)), 0, imageHeight);
        const int y1 = std::clamp(int(std::lround(bottom)), 0, imageHeight);
        const int first = std::max(0, x0), last = std::min(x1, imageWidth);
        if (first >= last)
            return;
        const QRgb color = band < 0 ? outline : fills[size_t(band)];
        uchar* line = bits + y0 * stride;
        for (int y = y0; y < y1; ++y, line += stride)
            std::fill(reinterpret_cast<QRgb*>(line) + first, reinterpret_cast<QRgb*>(line) + last, color);
    };

    const double base = row(0);
    const double width = clip.width() * scale;
    // One column at a time: the highest state landing in it is filled, the lowest remembered for
    // the outline tick.
    int column = INT_MIN;
    int columnEnd = INT_MIN;
    size_t highest = 0;
    double lowestTotal = 0;
    auto flush = [&] {
        if (column == INT_MIN)
            return;
        const Tops& tops = m_tops[highest];
        double below = base;
        for (int band = 0; band < bandCount; ++band) {
            const double above = row(tops[size_t(band)]);
            if (below - above >= 0.5)
                fill(column, columnEnd, above, below, band);
            below = std::min(below, above);
        }
        const double high = row(tops.back());
        fill(column, columnEnd, high, std::max(high + scale, row(lowestTotal)), -1);
    };
    for (size_t i = 0; i < m_keys.size(); ++i) {
        const double next = i + 1 < m_keys.size() ? m_keys[i + 1] : m_keys[i];
        int x0 = int(std::floor((keys->coordToPixel(m_keys[i]) - clip.left()) * scale));
        int x1 = std::max(x0 + 1, int(std::floor((keys->coordToPixel(next) - clip.left()) * scale)));
        if (x1 < 0 || x0 > width)
            continue;
        x0 = std::max(x0, 0);
        x1 = std::min(x1, int(std::ceil(width)));
        const double total = m_tops[i].back();
        if (x0 < columnEnd) {
            // Shares the open column: keep its highest state and its lowest total.
            if (total > m_tops[highest].back())
                highest = i;
            lowestTotal = std::min(lowestTotal, total);
            if (x1 <= columnEnd)
                continue;
            flush();
            x0 = columnEnd;
        } else {
            flush();
        }
        column = x0;
        columnEnd = x1;
        highest = i;
        lowestTotal = total;
    }
    flush();
    if (!vector) {
        m_image.setDevicePixelRatio(scale);
        painter->drawImage(QPointF(clip.topLeft()), m_image);
    }
}

void StackedBands::drawLegendIcon(QCPPainter* painter, const QRectF& rect) const
{
    painter->fillRect(rect, m_fills[0]);
}

} // namespace oomlens
