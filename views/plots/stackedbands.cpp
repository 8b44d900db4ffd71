#include "views/plots/stackedbands.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace oomlens {

namespace {

using Fills = std::array<QColor, StackedBands::bandCount>;

// Where a column's rectangles go: on screen straight into the raster image (reused between
// redraws), in a vector export real rectangles through the painter. Band -1 is the outline.
class ColumnCanvas
{
public:
    ColumnCanvas(QCPPainter* painter, const QRect& clip, const Fills& fills, const QColor& outline)
        : m_painter(painter)
        , m_clip(clip)
        , m_colors(&fills)
        , m_outlineColor(&outline)
    {
        painter->setPen(Qt::NoPen);
    }

    ColumnCanvas(QImage& image, const QRect& clip, double scale, const Fills& fills, const QColor& outline)
        : m_clip(clip)
        , m_colors(&fills)
        , m_outlineColor(&outline)
    {
        // Reused between redraws: a fresh multi-megabyte image per frame costs page faults.
        const QSize size(int(std::ceil(clip.width() * scale)), int(std::ceil(clip.height() * scale)));
        if (image.size() != size)
            image = QImage(size, QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(1.0);
        image.fill(Qt::transparent);
        // Raw rows: QImage::scanLine() checks for a detach on every call, which at one call per
        // row per column was most of the redraw time.
        m_bits = image.bits();
        m_stride = image.bytesPerLine();
        m_width = image.width();
        m_height = image.height();
        for (size_t band = 0; band < m_fills.size(); ++band)
            m_fills[band] = qPremultiply(fills[band].rgba());
        m_outline = qPremultiply(outline.rgba());
    }

    // Columns [x0, x1) between device pixel rows `top` and `bottom`, relative to the clip.
    void fill(int x0, int x1, double top, double bottom, int band) const
    {
        if (m_painter) {
            const QColor& color = band < 0 ? *m_outlineColor : (*m_colors)[size_t(band)];
            m_painter->fillRect(QRectF(m_clip.left() + x0, m_clip.top() + top, x1 - x0, bottom - top), color);
            return;
        }
        const int y0 = std::clamp(int(std::lround(top)), 0, m_height);
        const int y1 = std::clamp(int(std::lround(bottom)), 0, m_height);
        const int first = std::max(0, x0), last = std::min(x1, m_width);
        if (first >= last)
            return;
        const QRgb color = band < 0 ? m_outline : m_fills[size_t(band)];
        uchar* line = m_bits + y0 * m_stride;
        for (int y = y0; y < y1; ++y, line += m_stride)
            std::fill(reinterpret_cast<QRgb*>(line) + first, reinterpret_cast<QRgb*>(line) + last, color);
    }

private:
    QCPPainter* m_painter = nullptr; // set for a vector export
    QRect m_clip;
    const Fills* m_colors;
    const QColor* m_outlineColor;
    std::array<QRgb, StackedBands::bandCount> m_fills {};
    QRgb m_outline = 0;
    uchar* m_bits = nullptr;
    qsizetype m_stride = 0;
    int m_width = 0;
    int m_height = 0;
};

// One pixel column [begin, end) and the states landing in it: the highest is filled, the lowest
// total remembered for the outline tick.
struct PixelColumn
{
    int begin = INT_MIN;
    int end = INT_MIN;
    size_t highest = 0; // index of the state with the highest total
    double lowestTotal = 0;
};

// Walks the step data one column at a time, handing each finished column to `draw`: states
// sharing a column merge into it, a state wider than its column's rest opens the next one.
template <typename PixelOf, typename Draw>
void forEachColumn(const std::vector<double>& keys, const std::vector<StackedBands::Tops>& tops, PixelOf pixelOf,
    double width, Draw draw)
{
    PixelColumn column;
    const auto flush = [&] {
        if (column.begin != INT_MIN)
            draw(column);
    };
    for (size_t i = 0; i < keys.size(); ++i) {
        const double next = i + 1 < keys.size() ? keys[i + 1] : keys[i];
        int x0 = int(std::floor(pixelOf(keys[i])));
        int x1 = std::max(x0 + 1, int(std::floor(pixelOf(next))));
        if (x1 < 0 || x0 > width)
            continue;
        x0 = std::max(x0, 0);
        x1 = std::min(x1, int(std::ceil(width)));
        const double total = tops[i].back();
        if (x0 < column.end) {
            // Shares the open column: keep its highest state and its lowest total.
            if (total > tops[column.highest].back())
                column.highest = i;
            column.lowestTotal = std::min(column.lowestTotal, total);
            if (x1 <= column.end)
                continue;
            flush();
            x0 = column.end;
        } else {
            flush();
        }
        column = { x0, x1, i, total };
    }
    flush();
}

// The column's highest state band by band from `base` up, then the outline tick from the lowest
// total to the highest (at least a device pixel tall).
template <typename Row>
void fillColumn(const ColumnCanvas& canvas, const PixelColumn& column, const StackedBands::Tops& tops, double base,
    double scale, Row row)
{
    double below = base;
    for (int band = 0; band < StackedBands::bandCount; ++band) {
        const double above = row(tops[size_t(band)]);
        if (below - above >= 0.5)
            canvas.fill(column.begin, column.end, above, below, band);
        below = std::min(below, above);
    }
    const double high = row(tops.back());
    canvas.fill(column.begin, column.end, high, std::max(high + scale, row(column.lowestTotal)), -1);
}

} // namespace

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
    const ColumnCanvas canvas = vector ? ColumnCanvas(painter, clip, m_fills, m_outline)
                                       : ColumnCanvas(m_image, clip, scale, m_fills, m_outline);
    // Device pixel rows, relative to the image, of a value.
    const auto row = [&](double value) { return (values->coordToPixel(value) - clip.top()) * scale; };
    const auto pixelOf = [&](double key) { return (keys->coordToPixel(key) - clip.left()) * scale; };
    const double base = row(0);
    forEachColumn(m_keys, m_tops, pixelOf, clip.width() * scale,
        [&](const PixelColumn& column) { fillColumn(canvas, column, m_tops[column.highest], base, scale, row); });
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
