#include "views/timelinewidget.h"

#include "core/presentation/historywords.h"
#include "core/presentation/labels.h"
#include "views/categorycolors.h"
#include "views/plots/annotationstrip.h"
#include "views/plots/axistickers.h"
#include "views/plots/phaseshading.h"
#include "views/plots/plotstyle.h"
#include "views/plots/stackedbands.h"
#include "views/viewutil.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <array>
#include <cmath>
#include <numbers>
#include <optional>

namespace oomlens {

namespace {

constexpr int maxStepLabels = 24;

// How much of the run the shown trace saw; nothing for an empty view.
std::optional<TraceHistory> historyOf(const TimelineData* data)
{
    if (!data || !data->device())
        return std::nullopt;
    return data->device()->history;
}

} // namespace

TimelineWidget::TimelineWidget(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(8, 6, 8, 0);
    m_info = new QLabel(this);
    m_info->setTextFormat(Qt::RichText);
    bar->addWidget(m_info, 1);
    m_axisBox = new QComboBox(this);
    m_axisBox->addItem(QStringLiteral("Time axis"));
    m_axisBox->addItem(QStringLiteral("Event-index axis"));
    m_axisBox->setToolTip(QStringLiteral("Plot against wall-clock time or against the event number"));
    bar->addWidget(m_axisBox);
    auto* reset = new QPushButton(QStringLiteral("Reset zoom"), this);
    reset->setToolTip(QStringLiteral("Show the whole trace (Home)"));
    bar->addWidget(reset);
    auto* exportButton = new QPushButton(QStringLiteral("Export…"), this);
    exportButton->setToolTip(QStringLiteral("Save the chart as PNG or SVG"));
    bar->addWidget(exportButton);
    layout->addLayout(bar);
    m_legend = new QLabel(this);
    m_legend->setTextFormat(Qt::RichText);
    m_legend->setContentsMargins(8, 0, 8, 0);
    layout->addWidget(m_legend);

    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(300);
    m_plot->setFocusPolicy(Qt::StrongFocus);
    m_plot->setMouseTracking(true);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    // While dragging, frames matter more than smooth edges; the reserved line redraws without
    // antialiasing and solid lines take QPainter's fast polyline path.
    m_plot->setNoAntialiasingOnDrag(true);
    m_plot->setPlottingHints(m_plot->plottingHints() | QCP::phFastPolylines);
    m_plot->axisRect()->setRangeDrag(Qt::Horizontal);
    m_plot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_plot->yAxis->setTicker(QSharedPointer<ByteAxisTicker>::create());
    m_plot->yAxis->setLabel(QStringLiteral("memory"));
    m_plot->xAxis2->setVisible(false);
    m_plot->xAxis2->setTickLabelRotation(-30);
    m_plot->installEventFilter(this);
    layout->addWidget(m_plot, 1);

    m_bands = new StackedBands(m_plot->xAxis, m_plot->yAxis);
    m_bands->setName(QStringLiteral("Allocated"));
    m_reserved = m_plot->addGraph();
    m_reserved->setName(QStringLiteral("Reserved"));
    m_reserved->setLineStyle(QCPGraph::lsStepLeft);
    m_privatePools = m_plot->addGraph();
    m_privatePools->setName(QStringLiteral("Private pools"));
    m_privatePools->setLineStyle(QCPGraph::lsStepLeft);
    m_pendingFrees = m_plot->addGraph();
    m_pendingFrees->setName(QStringLiteral("Pending frees"));
    m_pendingFrees->setLineStyle(QCPGraph::lsStepLeft);
    m_cardGap = m_plot->addGraph();
    m_cardGap->setName(QStringLiteral("Rest of the card"));
    m_cardGap->setLineStyle(QCPGraph::lsStepLeft);
    m_cardGap->setChannelFillGraph(m_reserved);

    connect(m_axisBox, &QComboBox::currentIndexChanged, this,
        [this](int index) { setAxis(index == 0 ? Axis::Time : Axis::Events); });
    connect(reset, &QPushButton::clicked, this, &TimelineWidget::resetZoom);
    connect(exportButton, &QPushButton::clicked, this, &TimelineWidget::exportDialog);
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
        [this](const QCPRange&) { rebuildVisible(); });
    connect(m_plot, &QCustomPlot::afterReplot, this, [this] { m_drawn = true; });
    connect(m_plot, &QCustomPlot::mouseMove, this, &TimelineWidget::onMouseMove);
    connect(m_plot, &QCustomPlot::mousePress, this, &TimelineWidget::onMousePress);
    connect(m_plot, &QCustomPlot::mouseRelease, this, &TimelineWidget::onMouseRelease);
    applyColors();
}

TimelineWidget::~TimelineWidget() = default;

void TimelineWidget::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_data = std::move(data);
    m_cursorEvent = -1;
    m_pools = m_data && m_data->device() ? privatePools(m_data->snapshot(), *m_data->device()) : PrivatePools {};
    m_pending = m_data && m_data->device() ? pendingFrees(m_data->snapshot(), *m_data->device()) : PendingFrees {};
    updateShownCard();
    const bool hasTime = m_data && m_data->hasTime();
    m_axisBox->setEnabled(hasTime);
    m_axis = hasTime ? m_preferredAxis : Axis::Events;
    {
        const QSignalBlocker blocker(m_axisBox);
        m_axisBox->setCurrentIndex(m_axis == Axis::Time ? 0 : 1);
    }
    buildStatic();
    resetZoom();
}

void TimelineWidget::setCardBand(std::optional<CardTimelineBand> band)
{
    m_card = std::move(band);
    updateShownCard();
    if (m_data) {
        buildStatic();
        resetZoom();
    }
}

void TimelineWidget::updateShownCard()
{
    m_cardShown.reset();
    if (m_card && m_data && m_data->device() && m_data->device()->device == m_card->device)
        m_cardShown = m_card;
}

const CardTimelineBand* TimelineWidget::shownCardBand() const
{
    return m_cardShown ? &*m_cardShown : nullptr;
}

uint64_t TimelineWidget::cardBandTopAt(int64_t event) const
{
    const CardTimelineBand* band = shownCardBand();
    const std::optional<uint64_t> outside = band ? band->outsideAt(event) : std::nullopt;
    return outside && m_data ? m_data->reservedAt(event) + *outside : 0;
}

void TimelineWidget::setAxis(Axis axis)
{
    if (axis == Axis::Time && !(m_data && m_data->hasTime()))
        axis = Axis::Events;
    if (axis == m_axis)
        return;
    const auto [first, last] = visibleEvents();
    m_axis = axis;
    {
        const QSignalBlocker blocker(m_axisBox);
        m_axisBox->setCurrentIndex(m_axis == Axis::Time ? 0 : 1);
    }
    buildStatic();
    zoomToEvents(first, last);
}

double TimelineWidget::keyOf(int64_t event) const
{
    if (!m_data)
        return double(event);
    return m_axis == Axis::Time ? double(m_data->timeOf(event)) : double(event);
}

int64_t TimelineWidget::eventAt(double key) const
{
    if (!m_data || m_data->eventCount() == 0)
        return -1;
    const int64_t last = m_data->eventCount() - 1;
    if (m_axis == Axis::Time)
        return std::clamp<int64_t>(m_data->eventAtTime(int64_t(std::floor(key))), 0, last);
    return std::clamp<int64_t>(int64_t(std::llround(key)), 0, last);
}

std::pair<int64_t, int64_t> TimelineWidget::visibleEvents() const
{
    const QCPRange range = m_plot->xAxis->range();
    return { std::max<int64_t>(0, eventAt(range.lower)), std::max<int64_t>(0, eventAt(range.upper)) };
}

void TimelineWidget::zoomToEvents(int64_t first, int64_t last)
{
    if (!m_data || m_data->eventCount() == 0)
        return;
    double lower = keyOf(first);
    double upper = keyOf(last);
    if (upper <= lower)
        upper = lower + 1;
    m_plot->xAxis->setRange(lower, upper);
    rebuildVisible();
}

void TimelineWidget::resetZoom()
{
    // A snapshot without allocation history has no curve to draw: say so instead of an empty chart.
    const std::optional<TraceHistory> history = historyOf(m_data.get());
    const bool noHistory = !m_data || m_data->eventCount() == 0 || (history && history->segmentsOnly());
    m_plot->setVisible(!noHistory);
    m_noHistory = noHistory;
    if (noHistory) {
        m_bands->clearData();
        m_reserved->data()->clear();
        m_privatePools->data()->clear();
        m_pendingFrees->data()->clear();
        m_cardGap->data()->clear();
        m_info->setText(QStringLiteral("<b>No timeline:</b> this snapshot holds no allocation history, only the "
                                       "allocator's state at the dump (see the allocator state below)."));
        m_plot->replot();
        return;
    }
    const double lower = keyOf(0);
    const double upper = keyOf(m_data->eventCount() - 1);
    // The OOM is usually the last event: leave it room to be seen off the axis line.
    const double margin = std::max(1.0, (upper - lower) * 0.01);
    m_plot->xAxis->setRange(lower - margin, upper + 2 * margin);
    rebuildVisible();
}

void TimelineWidget::rebuildVisible()
{
    if (m_rebuilding || !m_data || m_data->eventCount() == 0 || !m_plot->isVisibleTo(this))
        return;
    m_rebuilding = true;
    const QCPRange range = clampedRange(m_plot->xAxis->range());
    m_plot->xAxis->setRange(range);
    const std::vector<int64_t> boundaries = columnBoundaries(range);

    const auto points = m_data->downsample(boundaries);
    QVector<double> keys;
    keys.reserve(qsizetype(points.size()));
    for (const auto& point : points)
        keys.push_back(keyOf(point.event));
    uint64_t visibleMax = setBands(points, keys);
    const auto reserved = m_data->reservedPoints(boundaries);
    const QVector<double> reservedKeys = setReserved(reserved, visibleMax);
    setPendingFrees(points, keys);
    setCardGap(reserved, reservedKeys, visibleMax);
    rescaleValueAxis(visibleMax);

    const auto [first, last] = visibleEvents();
    QString info = QStringLiteral("Events %1–%2 of %3").arg(first).arg(last).arg(m_data->eventCount());
    if (m_data->device())
        info += QStringLiteral(" · peak <b>%1</b>").arg(bytesText(m_data->device()->peakAllocatedBytes));
    info += QStringLiteral(" · <span style='color:gray'>wheel: zoom · drag: pan · Shift+drag: zoom to area · "
                           "click: move cursor</span>");
    m_info->setText(info);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
    m_rebuilding = false;
}

// Keep panning within the data, plus a little air at both ends.
QCPRange TimelineWidget::clampedRange(QCPRange range) const
{
    const double fullLower = keyOf(0), fullUpper = keyOf(m_data->eventCount() - 1);
    const double air = std::max(1.0, (fullUpper - fullLower) * 0.02);
    if (range.size() > fullUpper - fullLower + 2 * air)
        range = QCPRange(fullLower - air, fullUpper + air);
    if (range.lower < fullLower - air)
        range += (fullLower - air) - range.lower;
    if (range.upper > fullUpper + air)
        range -= range.upper - (fullUpper + air);
    return range;
}

// One bucket of events per pixel column of the visible range.
std::vector<int64_t> TimelineWidget::columnBoundaries(const QCPRange& range) const
{
    const int64_t count = m_data->eventCount();
    const int pixels = std::max(16, m_plot->axisRect()->width());
    std::vector<int64_t> boundaries;
    boundaries.reserve(size_t(pixels) + 2);
    boundaries.push_back(eventAt(range.lower));
    for (int p = 1; p <= pixels; ++p) {
        const double key = range.lower + range.size() * p / pixels;
        const int64_t at = m_axis == Axis::Time
            ? std::clamp<int64_t>(m_data->eventAtTime(int64_t(std::floor(key))), 0, count - 1)
            : eventAt(key);
        const int64_t event = at + (p == pixels ? 1 : 0);
        if (event > boundaries.back())
            boundaries.push_back(std::min(event, count));
    }
    if (boundaries.size() < 2)
        boundaries.push_back(std::min(boundaries.back() + 1, count));
    return boundaries;
}

// The stacked category bands; returns the highest stack drawn.
uint64_t TimelineWidget::setBands(const std::vector<TimelineData::Point>& points, const QVector<double>& keys)
{
    uint64_t visibleMax = 0;
    std::vector<StackedBands::Tops> tops(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
        uint64_t running = 0;
        for (size_t band = 0; band < stackOrder.size(); ++band) {
            running += points[i].bytes[size_t(stackOrder[band])];
            tops[i][band] = double(running);
        }
        visibleMax = std::max(visibleMax, running);
    }
    m_bands->setData(std::vector<double>(keys.begin(), keys.end()), std::move(tops));
    m_lastPointCount = int(points.size());
    return visibleMax;
}

// The reserved line and, beneath it, the private pools' share; returns the reserved points' keys.
QVector<double> TimelineWidget::setReserved(
    const std::vector<TimelineData::ReservedPoint>& reserved, uint64_t& visibleMax)
{
    QVector<double> reservedKeys, reservedValues;
    for (const auto& point : reserved) {
        reservedKeys.push_back(keyOf(point.event));
        reservedValues.push_back(double(point.bytes));
        visibleMax = std::max(visibleMax, point.bytes);
    }
    m_reserved->setData(reservedKeys, reservedValues, true);
    // Private pools change only at segment events, which the reserved points keep.
    QVector<double> privateValues;
    if (m_pools.hasPrivate()) {
        for (const auto& point : reserved) {
            const bool inTrace = point.event >= 0 && size_t(point.event) < m_pools.privateReservedAfter.size();
            privateValues.push_back(
                double(inTrace ? m_pools.privateReservedAfter[size_t(point.event)] : m_pools.initialPrivateReserved));
        }
    }
    m_privatePools->setData(privateValues.isEmpty() ? QVector<double>() : reservedKeys, privateValues, true);
    return reservedKeys;
}

// Pending frees change at free_requested / free_completed: drawn at the allocation points, the
// most pending within each point's span of events so a short window is not lost between pixels.
void TimelineWidget::setPendingFrees(const std::vector<TimelineData::Point>& points, const QVector<double>& keys)
{
    QVector<double> pendingValues;
    if (!m_pending.windows.empty()) {
        for (size_t i = 0; i < points.size(); ++i) {
            const int64_t from = i == 0 ? points[i].event : points[i - 1].event + 1;
            uint64_t most = 0;
            for (int64_t e = std::max<int64_t>(0, from); e <= points[i].event; ++e)
                most = std::max(most, m_pending.pendingAt(e));
            pendingValues.push_back(double(most));
        }
    }
    m_pendingFrees->setData(pendingValues.isEmpty() ? QVector<double>() : keys, pendingValues, true);
}

// The rest of the card stacks on reserved; the card's total bounds the chart.
void TimelineWidget::setCardGap(
    const std::vector<TimelineData::ReservedPoint>& reserved, const QVector<double>& reservedKeys, uint64_t& visibleMax)
{
    QVector<double> cardValues;
    if (const CardTimelineBand* card = shownCardBand()) {
        // Where no figure says how much the rest of the card held, the band has a gap.
        for (const auto& point : reserved) {
            const std::optional<uint64_t> outside = card->outsideAt(point.event);
            cardValues.push_back(outside ? double(point.bytes + *outside) : qQNaN());
        }
        visibleMax = std::max(visibleMax, card->totalBytes);
    }
    m_cardGap->setData(cardValues.isEmpty() ? QVector<double>() : reservedKeys, cardValues, true);
}

void TimelineWidget::rescaleValueAxis(uint64_t visibleMax)
{
    const double top = std::max<double>(double(visibleMax) * 1.12, 1024.0);
    m_plot->yAxis->setRange(0, top);
}

int TimelineWidget::plottedPointCount() const
{
    return m_lastPointCount;
}

void TimelineWidget::buildStatic()
{
    m_plot->clearItems();
    m_cursorLine = new QCPItemStraightLine(m_plot);
    m_cursorLine->setVisible(false);
    m_cardTotal = nullptr;
    if (const CardTimelineBand* card = shownCardBand()) {
        m_cardTotal = new QCPItemStraightLine(m_plot);
        // A straight line is infinite: two points at the total's height draw it across the chart.
        m_cardTotal->point1->setCoords(0, double(card->totalBytes));
        m_cardTotal->point2->setCoords(1, double(card->totalBytes));
        m_cardTotal->setProperty("cardTotal", true);
    }
    m_cursorLine->setLayer(QStringLiteral("overlay"));
    m_plot->xAxis->setTicker(m_axis == Axis::Time ? QSharedPointer<QCPAxisTicker>(new TimeAxisTicker)
                                                  : QSharedPointer<QCPAxisTicker>(new EventAxisTicker));
    m_plot->xAxis->setLabel(
        m_axis == Axis::Time ? QStringLiteral("time since the first event") : QStringLiteral("event index"));
    m_plot->xAxis2->setVisible(false);
    m_plot->axisRect()->setMinimumMargins(QMargins());
    if (!m_data || m_data->eventCount() == 0) {
        applyColors();
        return;
    }

    addPhaseShading();
    addAnnotationStrip();
    addStepTicks();
    if (const DeviceAnalysis* device = m_data->device()) {
        if (device->peakEvent >= 0)
            addMarker(QStringLiteral("peak"), device->peakEvent, 0.02,
                QStringLiteral("peak %1").arg(bytesText(device->peakAllocatedBytes)));
        for (const OomAnalysis& oom : device->ooms) {
            if (oom.eventIndex >= 0)
                addMarker(QStringLiteral("oom"), oom.eventIndex, 0.10,
                    QStringLiteral("OOM: %1 requested").arg(bytesText(oom.requestedBytes)));
        }
    }
    applyColors();
    if (m_cursorEvent >= 0)
        setCursorEvent(m_cursorEvent);
}

// The analysis' phase runs behind the curves.
void TimelineWidget::addPhaseShading()
{
    std::vector<PhaseShading::Run> shading;
    shading.reserve(m_data->phaseRuns().size());
    for (const auto& run : m_data->phaseRuns())
        shading.push_back({ keyOf(run.firstEvent), keyOf(run.lastEvent + 1), run.phase });
    auto* phases = new PhaseShading(m_plot);
    phases->setLayer(QStringLiteral("grid"));
    phases->setClipAxisRect(m_plot->axisRect());
    phases->setRuns(std::move(shading));
}

void TimelineWidget::addAnnotationStrip()
{
    if (m_data->annotationSpans().empty())
        return;
    std::vector<AnnotationStrip::Bar> bars;
    bars.reserve(m_data->annotationSpans().size());
    for (const AnnotationSpan& span : m_data->annotationSpans()) {
        if (!span.mark)
            bars.push_back({ keyOf(span.firstEvent), keyOf(span.lastEvent + 1), span.depth,
                QString::fromUtf8(annotationLabel(span.name)), span.closed });
    }
    auto* strip = new AnnotationStrip(m_plot);
    strip->setClipAxisRect(m_plot->axisRect());
    strip->setBars(std::move(bars));
}

// The analysis' step starts as slanted labels on the top axis.
void TimelineWidget::addStepTicks()
{
    const auto& steps = m_data->stepStarts();
    if (steps.empty())
        return;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const size_t stride = (steps.size() + maxStepLabels - 1) / maxStepLabels;
    for (size_t i = 0; i < steps.size(); i += stride)
        ticker->addTick(keyOf(steps[i].event), QStringLiteral("step %1").arg(steps[i].step));
    m_plot->xAxis2->setTicker(ticker);
    m_plot->xAxis2->setVisible(true);
    // Room for the slanted step labels even when none is in view, so zooming between steps
    // does not make the whole chart jump up and down.
    const QFontMetrics metrics(m_plot->xAxis2->tickLabelFont());
    int widest = 0;
    for (auto it = ticker->ticks().cbegin(); it != ticker->ticks().cend(); ++it)
        widest = std::max(widest, metrics.horizontalAdvance(it.value()));
    const double slant = std::abs(m_plot->xAxis2->tickLabelRotation()) * std::numbers::pi / 180;
    const int top = int(std::ceil(widest * std::sin(slant) + metrics.height() * std::cos(slant)))
        + m_plot->xAxis2->tickLabelPadding() + m_plot->xAxis2->padding() + m_plot->xAxis2->tickLengthOut() + 4;
    m_plot->axisRect()->setMinimumMargins(QMargins(0, top, 0, 0));
    m_plot->xAxis2->setRange(m_plot->xAxis->range());
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_plot->xAxis2,
        qOverload<const QCPRange&>(&QCPAxis::setRange), Qt::UniqueConnection);
}

// A vertical line at `event` with its label near the top (`y` of the axis rect's height).
void TimelineWidget::addMarker(const QString& kind, int64_t event, double y, const QString& text)
{
    auto* line = new QCPItemStraightLine(m_plot);
    line->setProperty("marker", kind);
    line->point1->setCoords(keyOf(event), 0);
    line->point2->setCoords(keyOf(event), 1);
    auto* label = new QCPItemText(m_plot);
    label->setProperty("marker", kind);
    label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(keyOf(event), y);
    label->setPositionAlignment(Qt::AlignTop | Qt::AlignRight);
    label->setText(text);
    label->setPadding(QMargins(4, 2, 4, 2));
}

void TimelineWidget::applyColors()
{
    const QPalette palette = this->palette();
    const QColor text = palette.color(QPalette::WindowText);
    stylePlot(m_plot, palette);
    styleAxis(m_plot->xAxis2, palette);
    m_plot->xAxis2->grid()->setVisible(false);

    QStringList legend;
    std::array<QColor, StackedBands::bandCount> fills;
    for (size_t i = 0; i < stackOrder.size(); ++i) {
        const QColor color = colors::category(stackOrder[i]);
        fills[i] = color;
        if (!listedWhenEmpty(stackOrder[i]) && !(m_data && m_data->series().holds(stackOrder[i])))
            continue;
        legend << QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2")
                      .arg(color.name(), categoryText(stackOrder[i]));
    }
    QColor outline = text;
    outline.setAlpha(150);
    m_bands->setColors(fills, outline);
    legend << QStringLiteral("<span style='color:%1'>&#9472;&#9472;</span>&nbsp;Reserved")
                  .arg(colors::reservedLine().name());
    m_reserved->setPen(QPen(colors::reservedLine(), 1.6, Qt::DashLine));
    m_reserved->setBrush(Qt::NoBrush);
    m_privatePools->setPen(QPen(colors::reservedLine(), 1.0));
    m_privatePools->setBrush(QBrush(colors::reservedLine(), Qt::BDiagPattern));
    if (m_pools.hasPrivate())
        legend << QStringLiteral("<span style='color:%1'>&#9636;</span>&nbsp;Private pools (CUDA graphs, MemPools)")
                      .arg(colors::reservedLine().name());
    QColor pendingColor = colors::category(Category::Communication);
    m_pendingFrees->setPen(QPen(pendingColor, 1.0));
    m_pendingFrees->setBrush(QBrush(pendingColor, Qt::DiagCrossPattern));
    if (!m_pending.windows.empty())
        legend << QStringLiteral(
            "<span style='color:%1'>&#9638;</span>&nbsp;Pending frees (waiting for another stream)")
                      .arg(pendingColor.name());
    QColor cardColor = colors::oomMarker();
    cardColor.setAlpha(60);
    m_cardGap->setPen(QPen(colors::oomMarker(), 1.0, Qt::DotLine));
    m_cardGap->setBrush(QBrush(cardColor, Qt::Dense5Pattern));
    if (m_cardTotal)
        m_cardTotal->setPen(QPen(colors::oomMarker(), 1.2, Qt::DashDotLine));
    if (const CardTimelineBand* card = shownCardBand())
        legend << QStringLiteral("<span style='color:%1'>&#9638;</span>&nbsp;%2")
                      .arg(colors::oomMarker().name(), toQString(card->label).toHtmlEscaped());
    addHistoryToLegend(legend);
    colorMarkers(palette);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

// What the trace's history lacks: in place of the chart when there is no trace, else one line.
void TimelineWidget::addHistoryToLegend(QStringList& legend)
{
    const std::optional<TraceHistory> history = historyOf(m_data.get());
    if (history && history->segmentsOnly()) {
        // The legend's row carries what is missing and how to record it, in place of the chart.
        QStringList lines;
        for (const std::string& line : historyStatement(m_data->snapshot(), *history))
            lines << toQString(line).toHtmlEscaped();
        lines << QStringLiteral("<i>%1</i>").arg(toQString(historyAdvice(*history)).toHtmlEscaped());
        legend = QStringList { lines.join(QStringLiteral("<br>")) };
    } else if (history && history->truncated()) {
        legend << QStringLiteral("<span style='color:gray'>the curves start at <b>%1</b>: memory older than the trace "
                                 "(%2 allocations), live before its first entry</span>")
                      .arg(bytesText(history->olderBytes()))
                      .arg(history->olderBlocks());
    }
    if (m_legend) {
        // Without the chart below it, the statement sits at the top instead of mid-page.
        m_legend->setWordWrap(history && history->segmentsOnly());
        m_legend->setAlignment(Qt::AlignLeft | Qt::AlignTop);
        m_legend->setText(legend.join(QStringLiteral("&nbsp;&nbsp; ")));
    }
}

void TimelineWidget::colorMarkers(const QPalette& palette)
{
    for (int i = 0; i < m_plot->itemCount(); ++i) {
        QCPAbstractItem* item = m_plot->item(i);
        const QString marker = item->property("marker").toString();
        const QColor color = marker == QLatin1String("oom") ? colors::oomMarker() : colors::peakMarker();
        if (auto* line = qobject_cast<QCPItemStraightLine*>(item); line && !marker.isEmpty())
            line->setPen(QPen(color, 1.5, marker == QLatin1String("oom") ? Qt::SolidLine : Qt::DashLine));
        if (auto* label = qobject_cast<QCPItemText*>(item)) {
            label->setColor(color);
            label->setBrush(palette.color(QPalette::Base));
            label->setPen(QPen(color));
        }
    }
    if (m_cursorLine)
        m_cursorLine->setPen(QPen(palette.color(QPalette::Highlight), 1.5));
}

void TimelineWidget::setCursorEvent(int64_t event)
{
    if (!m_data || m_data->eventCount() == 0 || !m_cursorLine)
        return;
    event = std::clamp<int64_t>(event, 0, m_data->eventCount() - 1);
    const bool changed = event != m_cursorEvent;
    m_cursorEvent = event;
    m_cursorLine->point1->setCoords(keyOf(event), 0);
    m_cursorLine->point2->setCoords(keyOf(event), 1);
    m_cursorLine->setVisible(true);
    // Bring the cursor into view when something else (evidence, the events list) moved it.
    const QCPRange range = m_plot->xAxis->range();
    if (!range.contains(keyOf(event))) {
        m_plot->xAxis->setRange(keyOf(event) - range.size() / 2, keyOf(event) + range.size() / 2);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else if (!m_drawn) {
        // The layers get their paint buffers on the first full replot.
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    } else {
        // The cursor has the buffered overlay layer to itself: moving it redraws that layer only.
        m_cursorLine->layer()->replot();
    }
    if (changed)
        emit cursorChanged(event);
}

void TimelineWidget::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::PaletteChange)
        applyColors();
    QWidget::changeEvent(event);
}

} // namespace oomlens
