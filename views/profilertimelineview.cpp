#include "views/profilertimelineview.h"

#include "core/presentation/labels.h"
#include "core/units.h"
#include "views/categorycolors.h"
#include "views/plots/axistickers.h"
#include "views/plots/plotstyle.h"
#include "views/plots/stackedbands.h"
#include "views/viewutil.h"

#include <QComboBox>
#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace oomlens {

namespace {

// The summary line: the format, the events and the peak, what the peak held in PyTorch's own
// categories (and the oomlens category each is shown as), and the reader's notes.
QString summaryText(const ProfilerTimeline& timeline)
{
    const ProfilerTimeline::Point* peak = timeline.peak();
    QString text = QStringLiteral("torch.profiler memory timeline (%1): %2 events, peak %3 at %4.")
                       .arg(QString::fromStdString(std::string(profilerTimelineFormatName(timeline.format))))
                       .arg(timeline.events)
                       .arg(bytesText(peak ? static_cast<uint64_t>(std::max<int64_t>(peak->total(), 0)) : 0))
                       .arg(QString::fromStdString(formatDurationUs(peak ? peak->timeUs - timeline.firstTimeUs() : 0)));
    if (peak) {
        QStringList parts;
        for (int p = 0; p < profilerCategoryCount; ++p) {
            const int64_t bytes = peak->bytes[static_cast<size_t>(p)];
            if (bytes > 0)
                parts << QStringLiteral("%1 %2 (%3)")
                             .arg(QString::fromStdString(
                                      std::string(profilerCategoryName(static_cast<ProfilerCategory>(p)))),
                                 bytesText(static_cast<uint64_t>(bytes)),
                                 QString::fromStdString(
                                     std::string(categoryLabel(oomlensCategory(static_cast<ProfilerCategory>(p))))));
        }
        if (!parts.isEmpty())
            text += QStringLiteral(" At the peak, in PyTorch's categories (shown as): ")
                + parts.join(QStringLiteral(", ")) + QStringLiteral(".");
    }
    for (const std::string& warning : timeline.warnings)
        text += QStringLiteral(" Note: ") + QString::fromStdString(warning) + QStringLiteral(".");
    return text;
}

// A point's bytes in oomlens's categories, stacked bottom band first.
StackedBands::Tops stackedTops(const ProfilerTimeline::Point& point)
{
    const auto mapped = toOomlensCategories(point.bytes);
    StackedBands::Tops top {};
    double sum = 0;
    for (int c = 0; c < categoryCount; ++c) {
        sum += static_cast<double>(mapped[static_cast<size_t>(c)]);
        top[static_cast<size_t>(c)] = sum;
    }
    return top;
}

// The comparison with an open snapshot for the timeline at `index`; the last one wins.
const ProfilerComparison* comparisonOf(const std::vector<ProfilerComparison>& comparisons, size_t index)
{
    const ProfilerComparison* comparison = nullptr;
    for (const ProfilerComparison& candidate : comparisons) {
        if (candidate.timelineIndex == index)
            comparison = &candidate;
    }
    return comparison;
}

} // namespace

ProfilerTimelineView::ProfilerTimelineView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    m_fileBox = new QComboBox(this);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(200);
    m_table = new QTableWidget(this);
    m_table->setColumnCount(4);
    m_table->setHorizontalHeaderLabels({ QStringLiteral("Category (oomlens)"), QStringLiteral("Snapshot, at its peak"),
        QStringLiteral("Profiler, at its peak"), QStringLiteral("PyTorch's categories") });
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setMaximumHeight(220);
    layout->addWidget(m_fileBox);
    layout->addWidget(m_summary);
    layout->addWidget(m_plot, 1);
    layout->addWidget(m_table);
    m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new TimeAxisTicker));
    m_plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new ByteAxisTicker));
    m_plot->xAxis->setLabel(QStringLiteral("Time since the profiler's first memory event"));
    connect(m_fileBox, &QComboBox::activated, this, [this](int) { rebuild(); });
    rebuild();
}

void ProfilerTimelineView::setTimelines(
    std::vector<ProfilerTimeline> timelines, std::vector<ProfilerComparison> comparisons)
{
    m_timelines = std::move(timelines);
    m_comparisons = std::move(comparisons);
    m_fileBox->clear();
    for (const ProfilerTimeline& timeline : m_timelines) {
        QString name = QString::fromStdString(timeline.path).section(QLatin1Char('/'), -1);
        if (timeline.device)
            name += QStringLiteral(" (%1)").arg(QString::fromStdString(*timeline.device));
        m_fileBox->addItem(name);
    }
    m_fileBox->setVisible(m_timelines.size() > 1);
    rebuild();
}

void ProfilerTimelineView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        rebuild();
}

void ProfilerTimelineView::rebuild()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    stylePlot(m_plot, palette());
    m_table->setRowCount(0);
    const int index = m_fileBox->currentIndex();
    if (m_timelines.empty() || index < 0 || static_cast<size_t>(index) >= m_timelines.size()) {
        m_summary->setText(QStringLiteral(
            "Open a torch.profiler memory timeline (prof.export_memory_timeline(\"memory.raw.json\") or "
            "\"memory.json\", or a chrome trace of a run profiled with profile_memory=True) to see what PyTorch's "
            "profiler says the memory was for."));
        m_table->setVisible(false);
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const ProfilerTimeline& timeline = m_timelines[static_cast<size_t>(index)];
    m_summary->setText(summaryText(timeline));
    plotTimeline(timeline);
    showComparison(comparisonOf(m_comparisons, static_cast<size_t>(index)));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void ProfilerTimelineView::plotTimeline(const ProfilerTimeline& timeline)
{
    const int64_t origin = timeline.firstTimeUs();
    std::vector<double> keys;
    std::vector<StackedBands::Tops> tops;
    keys.reserve(timeline.points.size());
    tops.reserve(timeline.points.size());
    double highest = 1;
    for (const ProfilerTimeline::Point& point : timeline.points) {
        tops.push_back(stackedTops(point));
        highest = std::max(highest, tops.back().back());
        keys.push_back(static_cast<double>(point.timeUs - origin));
    }
    auto* bands = new StackedBands(m_plot->xAxis, m_plot->yAxis);
    std::array<QColor, StackedBands::bandCount> fills;
    for (int c = 0; c < categoryCount; ++c)
        fills[static_cast<size_t>(c)] = colors::category(static_cast<Category>(c));
    bands->setColors(fills, palette().color(QPalette::WindowText));
    bands->setData(std::move(keys), std::move(tops));
    m_plot->xAxis->setRange(0, std::max<double>(1, static_cast<double>(timeline.lastTimeUs() - origin)));
    m_plot->yAxis->setRange(0, highest * 1.1);
    if (const ProfilerTimeline::Point* peak = timeline.peak()) {
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(static_cast<double>(peak->timeUs - origin), 0);
        line->point2->setCoords(static_cast<double>(peak->timeUs - origin), 1);
        line->setPen(QPen(colors::peakMarker(), 1.5, Qt::DashLine));
    }
}

void ProfilerTimelineView::showComparison(const ProfilerComparison* comparison)
{
    m_table->setVisible(comparison != nullptr);
    if (!comparison)
        return;
    m_table->setRowCount(static_cast<int>(comparison->rows.size()) + 1);
    int row = 0;
    for (const ProfilerComparisonRow& item : comparison->rows) {
        QStringList sources;
        for (ProfilerCategory source : item.profilerSources)
            sources << QString::fromStdString(std::string(profilerCategoryName(source)));
        m_table->setItem(
            row, 0, new QTableWidgetItem(QString::fromStdString(std::string(categoryLabel(item.category)))));
        m_table->setItem(row, 1, new QTableWidgetItem(bytesText(item.snapshotBytes)));
        m_table->setItem(row, 2, new QTableWidgetItem(bytesText(item.profilerBytes)));
        m_table->setItem(row, 3, new QTableWidgetItem(sources.join(QStringLiteral(", "))));
        ++row;
    }
    m_table->setItem(row, 0, new QTableWidgetItem(QStringLiteral("Total")));
    m_table->setItem(row, 1, new QTableWidgetItem(bytesText(comparison->snapshotPeakBytes)));
    m_table->setItem(row, 2, new QTableWidgetItem(bytesText(comparison->profilerPeakBytes)));
    m_table->resizeColumnsToContents();
}

} // namespace oomlens
