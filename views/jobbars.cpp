#include "views/jobbars.h"

#include "core/job/jobassembly.h"
#include "views/categorycolors.h"
#include "views/plots/axistickers.h"
#include "views/plots/plotstyle.h"
#include "views/viewutil.h"

#include <QEvent>
#include <QLabel>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace oomlens {

namespace {

constexpr double barWidth = 0.7;

// The card every rank ran on. Ranks of one job share a card type; when the known capacities
// differ the line would mislead one of them, so none is drawn.
uint64_t commonCapacity(const JobSummary& job)
{
    std::optional<uint64_t> capacity;
    for (const RankSummary& rank : job.ranks) {
        if (!rank.readable() || !rank.capacityBytes)
            continue;
        if (capacity && *capacity != *rank.capacityBytes)
            return 0;
        capacity = rank.capacityBytes;
    }
    return capacity.value_or(0);
}

// A tick per rank named after it (unreadable ones say so); returns the highest peak to show.
uint64_t labelRanks(QCustomPlot* plot, const JobSummary& job)
{
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    uint64_t top = 1;
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        QString label = toQString(rankName(rank));
        if (!rank.readable())
            label += QStringLiteral("\n(unreadable)");
        ticker->addTick(JobBars::columnOf(i), label);
        top = std::max({ top, rank.peakAllocatedBytes, rank.peakReservedBytes });
    }
    plot->xAxis->setTicker(ticker);
    plot->xAxis->setTickLabelRotation(job.ranks.size() > 16 ? -60 : 0);
    return top;
}

// Stacked from the bottom in category order, as the timeline stacks its bands.
void addCategoryBars(QCustomPlot* plot, const JobSummary& job)
{
    QCPBars* below = nullptr;
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
        bars->setName(categoryText(category));
        bars->setWidth(barWidth);
        const QColor color = colors::category(category);
        bars->setBrush(color);
        bars->setPen(QPen(color.darker(130), 0.6));
        for (size_t i = 0; i < job.ranks.size(); ++i)
            bars->addData(JobBars::columnOf(i), static_cast<double>(job.ranks[i].categoriesAtPeak[size_t(c)]));
        if (below)
            bars->moveAbove(below);
        below = bars;
    }
}

// Peak reserved: a tick across each column (what the allocator held, fragmentation included).
void addReservedTicks(QCustomPlot* plot, const JobSummary& job)
{
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        if (!rank.readable() || rank.peakReservedBytes == 0)
            continue;
        auto* tick = new QCPItemLine(plot);
        tick->start->setCoords(JobBars::columnOf(i) - barWidth / 2, double(rank.peakReservedBytes));
        tick->end->setCoords(JobBars::columnOf(i) + barWidth / 2, double(rank.peakReservedBytes));
        tick->setPen(QPen(colors::reservedLine(), 2));
    }
}

void addCapacityLine(QCustomPlot* plot, uint64_t capacity)
{
    auto* line = new QCPItemStraightLine(plot);
    line->point1->setCoords(0, double(capacity));
    line->point2->setCoords(1, double(capacity));
    line->setPen(QPen(colors::oomMarker(), 1.5, Qt::DashLine));
    auto* label = new QCPItemText(plot);
    label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    label->position->setTypeY(QCPItemPosition::ptPlotCoords);
    label->position->setCoords(0.01, double(capacity));
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    label->setText(QStringLiteral("card %1").arg(bytesText(capacity)));
    label->setColor(colors::oomMarker());
}

// Every rank that ran out of memory says so above its column; the failing one is shaded.
void markOomRanks(QCustomPlot* plot, const JobSummary& job, double headroom, const QColor& text)
{
    for (size_t i = 0; i < job.ranks.size(); ++i) {
        const RankSummary& rank = job.ranks[i];
        const bool failing = job.failingRank == i;
        if (!rank.oom && !failing)
            continue;
        if (failing) {
            auto* shade = new QCPItemRect(plot);
            shade->topLeft->setCoords(JobBars::columnOf(i) - 0.5, headroom);
            shade->bottomRight->setCoords(JobBars::columnOf(i) + 0.5, 0);
            QColor fill = colors::oomMarker();
            fill.setAlpha(45);
            shade->setBrush(fill);
            shade->setPen(QPen(colors::oomMarker(), 1.2));
            shade->setLayer(QStringLiteral("grid"));
        }
        auto* mark = new QCPItemText(plot);
        mark->position->setCoords(
            JobBars::columnOf(i), double(std::max(rank.peakReservedBytes, rank.peakAllocatedBytes)));
        mark->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        mark->setText(failing ? (job.failingIsClosestOnly() ? QStringLiteral("closest") : QStringLiteral("OOM ✕"))
                              : QStringLiteral("OOM"));
        mark->setColor(failing ? colors::oomMarker() : text);
        QFont font = mark->font();
        font.setBold(failing);
        mark->setFont(font);
    }
}

} // namespace

JobBars::JobBars(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(240);
    m_plot->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create());
    m_plot->yAxis->setLabel(QStringLiteral("peak per rank"));
    layout->addWidget(m_plot, 1);
    m_legend = new QLabel(this);
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setContentsMargins(8, 0, 8, 0);
    layout->addWidget(m_legend);

    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        if (const int rank = rankAt(event->pos()); rank >= 0)
            emit rankClicked(rank);
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent* event) {
        if (const int rank = rankAt(event->pos()); rank >= 0)
            emit rankDoubleClicked(rank);
    });
    stylePlot(m_plot, palette());
}

void JobBars::setJob(const JobSummary& job)
{
    m_job = job;
    rebuild();
}

int JobBars::rankAt(const QPoint& position) const
{
    const double x = m_plot->xAxis->pixelToCoord(position.x());
    const long index = std::lround(x);
    if (index < 0 || index >= static_cast<long>(m_job.ranks.size()) || std::abs(x - double(index)) > barWidth / 2)
        return -1;
    return static_cast<int>(index);
}

void JobBars::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && m_plot) {
        stylePlot(m_plot, palette());
        rebuild();
    }
}

void JobBars::rebuild()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_legend->setText(categoryLegendHtml()
        + QStringLiteral("&nbsp;&nbsp; <span style='color:%1'>&#9472;</span>&nbsp;peak reserved")
              .arg(colors::reservedLine().name()));
    uint64_t top = labelRanks(m_plot, m_job);
    addCategoryBars(m_plot, m_job);
    addReservedTicks(m_plot, m_job);
    m_capacity = commonCapacity(m_job);
    if (m_capacity > 0) {
        top = std::max(top, m_capacity);
        addCapacityLine(m_plot, m_capacity);
    }
    const double headroom = double(top) * 1.16;
    markOomRanks(m_plot, m_job, headroom, palette().color(QPalette::WindowText));
    m_plot->xAxis->setRange(-0.6, std::max<double>(0, double(m_job.ranks.size()) - 0.4));
    m_plot->yAxis->setRange(0, headroom);
    m_plot->replot();
}

} // namespace oomlens
