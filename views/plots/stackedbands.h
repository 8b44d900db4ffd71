#pragma once

#include "core/phase.h"

#include <qcustomplot.h>

#include <array>
#include <vector>

namespace oomlens {

// The stacked category bands of the timeline, drawn as one pixel column at a time: per column
// the highest state that falls in it is filled band by band, and a darker tick runs from the
// lowest to the highest total, so spikes and dips inside a pixel stay visible. QCPGraph's
// channel fills cost ~60 ms per redraw for seven bands of a few thousand spiky points; this
// costs one rectangle per band and column.
class StackedBands : public QCPAbstractPlottable
{
    Q_OBJECT
public:
    static constexpr int bandCount = categoryCount;
    using Tops = std::array<double, bandCount>; // cumulative, bottom band first

    StackedBands(QCPAxis* keyAxis, QCPAxis* valueAxis);
    // Step data: the state at keys[i] holds until keys[i + 1]. Keys ascending.
    void setData(std::vector<double> keys, std::vector<Tops> tops);
    void clearData();
    void setColors(const std::array<QColor, bandCount>& fills, const QColor& outline);
    size_t pointCount() const { return m_keys.size(); }
    // Highest total at or before `key` (what the top edge shows there); 0 before the first point.
    double topAt(double key) const;

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;
    QCPRange getKeyRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth) const override;
    QCPRange getValueRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth,
        const QCPRange& inKeyRange = QCPRange()) const override;

protected:
    void draw(QCPPainter* painter) override;
    void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

private:
    std::vector<double> m_keys;
    std::vector<Tops> m_tops;
    std::array<QColor, bandCount> m_fills;
    QColor m_outline;
    QImage m_image; // the on-screen columns, kept for the next redraw
};

} // namespace oomlens
