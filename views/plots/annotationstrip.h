#pragma once

#include "core/analysis/annotationspans.h"

#include <qcustomplot.h>

#include <vector>

namespace oomlens {

// The snapshot's named spans (record_function ranges such as ProfilerStep#3 or
// AdamW.step, the user's metadata runs) as thin labelled bars along the top of the plot, one row
// per nesting level. Like PhaseShading it draws only what is in view and at most one bar per
// pixel column, so a trace with thousands of steps redraws in the plot's width, not its length.
class AnnotationStrip : public QCPAbstractItem
{
    Q_OBJECT
public:
    struct Bar
    {
        double lower; // plot keys
        double upper;
        int depth;
        QString label;
        bool closed;
    };

    static constexpr int maxRows = 3; // deeper nesting is folded into the last row
    static constexpr double rowHeight = 13;

    explicit AnnotationStrip(QCustomPlot* plot);
    void setBars(std::vector<Bar> bars); // in lower-key order
    size_t barCount() const { return m_bars.size(); }
    int lastDrawnBars() const { return m_lastDrawn; } // for tests

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;

protected:
    void draw(QCPPainter* painter) override;

private:
    std::vector<Bar> m_bars;
    int m_lastDrawn = 0;
};

} // namespace oomlens
