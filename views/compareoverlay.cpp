#include "views/compareoverlay.h"

#include "views/plots/axistickers.h"
#include "views/plots/plotstyle.h"

#include <QEvent>
#include <QLabel>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <limits>

namespace oomlens {

namespace {

// Distinct from every category colour, and from each other for the colour-blind (blue/orange).
const QColor colorA(76, 120, 168);
const QColor colorB(245, 133, 24);

QString stepTick(const ComparisonTimeline& timeline, int position)
{
    const int stepA = timeline.firstStepA < 0 ? -1 : timeline.firstStepA + position;
    const int stepB = timeline.firstStepB < 0 ? -1 : timeline.firstStepB + position;
    if (stepA == stepB)
        return QStringLiteral("step %1").arg(stepA);
    return QStringLiteral("A step %1\nB step %2").arg(stepA).arg(stepB);
}

} // namespace

CompareOverlay::CompareOverlay(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(220);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create());
    m_plot->yAxis->setLabel(QStringLiteral("allocated"));
    layout->addWidget(m_plot, 1);
    m_legend = new QLabel(this);
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setContentsMargins(8, 0, 8, 0);
    layout->addWidget(m_legend);

    m_lowA = m_plot->addGraph();
    m_highA = m_plot->addGraph();
    m_lowB = m_plot->addGraph();
    m_highB = m_plot->addGraph();
    m_highA->setChannelFillGraph(m_lowA);
    m_highB->setChannelFillGraph(m_lowB);
    applyColors();
}

void CompareOverlay::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && m_plot)
        applyColors();
}

void CompareOverlay::applyColors()
{
    stylePlot(m_plot, palette());
    const auto styleSide = [](QCPGraph* high, QCPGraph* low, QColor color) {
        high->setPen(QPen(color, 1.6));
        low->setPen(QPen(color, 0.8));
        color.setAlpha(70);
        high->setBrush(color);
    };
    styleSide(m_highA, m_lowA, colorA);
    styleSide(m_highB, m_lowB, colorB);
    m_legend->setText(QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;&nbsp; "
                                     "<span style='color:%3'>&#9632;</span>&nbsp;%4")
                          .arg(colorA.name(), m_labelA.toHtmlEscaped(), colorB.name(), m_labelB.toHtmlEscaped()));
    m_plot->replot();
}

void CompareOverlay::setTimeline(const ComparisonTimeline& timeline, const QString& labelA, const QString& labelB)
{
    m_labelA = labelA;
    m_labelB = labelB;
    m_stepAligned = timeline.stepAligned;
    m_highestA = 0;
    m_highestB = 0;
    QVector<double> keys, lowA, highA, lowB, highB;
    const double gap = std::numeric_limits<double>::quiet_NaN(); // a side without events there
    for (const OverlayColumn& column : timeline.columns) {
        const double middle = (column.start + column.end) / 2;
        keys << middle;
        lowA << (column.a.present ? double(column.a.low) : gap);
        highA << (column.a.present ? double(column.a.high) : gap);
        lowB << (column.b.present ? double(column.b.low) : gap);
        highB << (column.b.present ? double(column.b.high) : gap);
        if (column.a.present)
            m_highestA = std::max(m_highestA, double(column.a.high));
        if (column.b.present)
            m_highestB = std::max(m_highestB, double(column.b.high));
    }
    m_lowA->setData(keys, lowA, true);
    m_highA->setData(keys, highA, true);
    m_lowB->setData(keys, lowB, true);
    m_highB->setData(keys, highB, true);

    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    if (timeline.stepAligned) {
        const int steps = int(timeline.axisEnd);
        const int every = std::max(1, steps / 12);
        for (int position = 0; position < steps; position += every)
            ticker->addTick(position, stepTick(timeline, position));
        m_plot->xAxis->setLabel(QStringLiteral("steps aligned: each step's start lines up"));
    } else {
        for (int percent = 0; percent <= 100; percent += 10)
            ticker->addTick(percent / 100.0, QStringLiteral("%1%").arg(percent));
        m_plot->xAxis->setLabel(QStringLiteral("time-normalised: 0% first event, 100% last, for each run"));
    }
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setRange(0, timeline.stepAligned ? timeline.axisEnd : 1.0);
    m_plot->yAxis->setRange(0, std::max<double>(1, double(timeline.maxBytes)) * 1.08);
    applyColors();
}

} // namespace oomlens
