#include "views/pinnedhostview.h"

#include "core/units.h"
#include "views/plots/axistickers.h"
#include "views/plots/plotstyle.h"

#include <QEvent>
#include <QLabel>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace oomlens {

PinnedHostView::PinnedHostView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(200);
    layout->addWidget(m_summary);
    layout->addWidget(m_plot, 1);
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new TimeAxisTicker));
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
    m_plot->xAxis->setLabel(QStringLiteral("Time since the host trace's first entry"));
    m_plot->legend->setVisible(true);
    rebuild();
}

void PinnedHostView::setTimeline(std::optional<PinnedHostTimeline> timeline, std::optional<int64_t> oomTimeUs)
{
    m_timeline = std::move(timeline);
    m_oomTimeUs = oomTimeUs;
    rebuild();
}

void PinnedHostView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        rebuild();
}

void PinnedHostView::rebuild()
{
    m_plot->clearGraphs();
    m_plot->clearItems();
    stylePlot(m_plot, palette());
    if (!m_timeline) {
        m_summary->setText(QStringLiteral("This snapshot recorded no pinned host memory. Record it with "
                                          "torch.cuda.memory._record_memory_history(record_pinned_host_memory=True) "
                                          "(PyTorch 2.14 or newer)."));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const PinnedHostTimeline& host = *m_timeline;
    QString text = QStringLiteral("Host RAM, not GPU memory: PyTorch's pinned host allocator held %1 in %2 segment(s) "
                                  "at the dump, %3 of it handed out.")
                       .arg(QString::fromStdString(formatBytes(host.reservedAtDump)))
                       .arg(host.segmentsAtDump)
                       .arg(QString::fromStdString(formatBytes(host.allocatedAtDump)));
    if (host.hasTrace())
        text += QStringLiteral(" Peak: %1 pinned, %2 handed out.")
                    .arg(QString::fromStdString(formatBytes(host.peakReserved)),
                        QString::fromStdString(formatBytes(host.peakAllocated)));
    if (m_oomTimeUs) {
        if (const auto state = host.at(*m_oomTimeUs))
            text += QStringLiteral(" At the GPU's OOM: %1 pinned, %2 handed out.")
                        .arg(QString::fromStdString(formatBytes(state->reserved)),
                            QString::fromStdString(formatBytes(state->allocated)));
    }
    m_summary->setText(text);
    if (!host.hasTrace()) {
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const int64_t origin = host.firstTimeUs();
    QVector<double> keys, allocated, reserved;
    for (size_t i = 1; i < host.points.size(); ++i) {
        keys.push_back(static_cast<double>(host.points[i].timeUs - origin));
        allocated.push_back(static_cast<double>(host.points[i].allocated));
        reserved.push_back(static_cast<double>(host.points[i].reserved));
    }
    // The state holds after the host trace's last entry: carried on to the GPU's OOM when later.
    const bool oomInside = m_oomTimeUs && *m_oomTimeUs >= origin;
    if (oomInside && *m_oomTimeUs > host.lastTimeUs()) {
        keys.push_back(static_cast<double>(*m_oomTimeUs - origin));
        allocated.push_back(allocated.back());
        reserved.push_back(reserved.back());
    }
    const QColor accent = palette().color(QPalette::Highlight);
    QCPGraph* handedOut = m_plot->addGraph();
    handedOut->setName(QStringLiteral("Handed out"));
    handedOut->setLineStyle(QCPGraph::lsStepLeft);
    handedOut->setPen(QPen(accent, 1.5));
    QColor fill = accent;
    fill.setAlphaF(0.3);
    handedOut->setBrush(fill);
    handedOut->setData(keys, allocated, true);
    QCPGraph* pinned = m_plot->addGraph();
    pinned->setName(QStringLiteral("Pinned (reserved)"));
    pinned->setLineStyle(QCPGraph::lsStepLeft);
    pinned->setPen(QPen(palette().color(QPalette::WindowText), 1.5, Qt::DashLine));
    pinned->setData(keys, reserved, true);
    const double span = std::max(1.0, keys.back());
    m_plot->xAxis->setRange(0, span);
    m_plot->yAxis->setRange(0, static_cast<double>(std::max(host.peakReserved, host.peakAllocated)) * 1.1 + 1);
    if (oomInside) {
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(static_cast<double>(*m_oomTimeUs - origin), 0);
        line->point2->setCoords(static_cast<double>(*m_oomTimeUs - origin), 1);
        line->setPen(QPen(Qt::red, 1.5));
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace oomlens
