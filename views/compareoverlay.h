#pragma once

#include "core/compare/comparison.h"

#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QLabel;

namespace oomlens {

// The two runs' allocated memory on one axis: each side a band from its lowest to its highest
// level per column (so a short peak never averages away), A in a neutral blue, B in orange.
// Step-aligned axes are labelled with the real step numbers; time-normalised ones in percent.
class CompareOverlay : public QWidget
{
    Q_OBJECT
public:
    explicit CompareOverlay(QWidget* parent = nullptr);

    void setTimeline(const ComparisonTimeline& timeline, const QString& labelA, const QString& labelB);
    QCustomPlot* plot() const { return m_plot; }
    bool stepAligned() const { return m_stepAligned; }
    // The highest level drawn for each side (the peaks, as the chart shows them).
    double highestA() const { return m_highestA; }
    double highestB() const { return m_highestB; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void applyColors();

    QCustomPlot* m_plot = nullptr;
    QLabel* m_legend = nullptr;
    QCPGraph* m_highA = nullptr;
    QCPGraph* m_lowA = nullptr;
    QCPGraph* m_highB = nullptr;
    QCPGraph* m_lowB = nullptr;
    QString m_labelA;
    QString m_labelB;
    bool m_stepAligned = false;
    double m_highestA = 0;
    double m_highestB = 0;
};

} // namespace oomlens
