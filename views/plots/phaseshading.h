#pragma once

#include "core/phase.h"

#include <qcustomplot.h>

#include <vector>

namespace oomlens {

// Background shading of the training phases as one plot item. Thousands of phase runs would be
// thousands of QCPItemRects redrawn on every pan; this item draws only the runs in view and at
// most one per pixel column where they are thinner than a pixel, so redraw cost follows the
// plot's width, not the trace's length. Colours come from the palette at draw time.
class PhaseShading : public QCPAbstractItem
{
    Q_OBJECT
public:
    struct Run
    {
        double lower; // plot keys
        double upper;
        Phase phase;
    };

    explicit PhaseShading(QCustomPlot* plot);
    // Runs in key order, not overlapping.
    void setRuns(std::vector<Run> runs);
    size_t runCount() const { return m_runs.size(); }
    // Rectangles painted by the last draw, for tests and the benchmark.
    int lastDrawnRects() const { return m_lastDrawn; }

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;

protected:
    void draw(QCPPainter* painter) override;

private:
    std::vector<Run> m_runs;
    int m_lastDrawn = 0;
};

} // namespace oomlens
