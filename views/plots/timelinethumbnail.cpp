#include "views/plots/timelinethumbnail.h"

#include "views/categorycolors.h"
#include "views/startuptrace.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace oomlens {

namespace {

// Where events and bytes land in the thumbnail's plot area.
struct ThumbnailScale
{
    QRect area;
    int64_t count; // events in the trace
    double pixelsPerByte;

    double xOf(int64_t event) const { return area.left() + double(event) * area.width() / double(count); }
    double yOf(uint64_t bytes) const { return area.bottom() + 1 - double(bytes) * pixelsPerByte; }
};

// The fullest sample of each pixel column; null where no sample fell.
std::vector<const TimelineData::Point*> fullestPerColumn(
    const std::vector<TimelineData::Point>& points, int columns, int64_t count)
{
    std::vector<const TimelineData::Point*> fullest(size_t(columns), nullptr);
    for (const TimelineData::Point& point : points) {
        const size_t column = size_t(std::clamp<int64_t>(point.event * columns / count, 0, columns - 1));
        if (!fullest[column] || point.total() > fullest[column]->total())
            fullest[column] = &point;
    }
    return fullest;
}

// The stacked categories, column by column; returns the columns painted.
int paintColumns(QPainter& painter, const ThumbnailScale& scale, const std::vector<const TimelineData::Point*>& fullest)
{
    const QRect& area = scale.area;
    const double columnWidth = double(area.width()) / double(fullest.size());
    const CategoryBytes* last = nullptr;
    int painted = 0;
    for (size_t c = 0; c < fullest.size(); ++c) {
        // A column no event fell in keeps the state before it (the trace's step function).
        const CategoryBytes* bytes = fullest[c] ? &fullest[c]->bytes : last;
        last = bytes;
        if (!bytes)
            continue;
        double bottom = area.bottom() + 1;
        for (Category category : TimelineWidget::stackOrder) {
            const double height = double((*bytes)[size_t(category)]) * scale.pixelsPerByte;
            if (height <= 0)
                continue;
            painter.fillRect(QRectF(area.left() + double(c) * columnWidth, bottom - height, columnWidth + 0.5, height),
                colors::category(category));
            bottom -= height;
        }
        ++painted;
    }
    return painted;
}

// Reserved as a step line over the bands.
void paintReservedLine(
    QPainter& painter, const ThumbnailScale& scale, const std::vector<TimelineData::ReservedPoint>& reserved)
{
    if (reserved.empty())
        return;
    QPolygonF line;
    for (const auto& point : reserved) {
        const double y = scale.yOf(point.bytes);
        const double x = scale.xOf(std::max<int64_t>(point.event, 0));
        if (!line.isEmpty())
            line << QPointF(x, line.back().y());
        line << QPointF(x, y);
    }
    line << QPointF(scale.area.right(), line.back().y());
    painter.setPen(QPen(colors::reservedLine(), 1.5));
    painter.drawPolyline(line);
}

// The peak and the OOM events, as the timeline marks them; the peak's label on `labelBaseline`.
void paintMarkers(QPainter& painter, const ThumbnailScale& scale, const DeviceAnalysis* device,
    const QFontMetrics& metrics, int labelBaseline)
{
    if (!device)
        return;
    const QRect& area = scale.area;
    if (device->peakEvent >= 0) {
        const double x = scale.xOf(device->peakEvent);
        painter.setPen(QPen(colors::peakMarker(), 1, Qt::DashLine));
        painter.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
        const QString label = QStringLiteral("peak %1").arg(bytesText(device->peakAllocatedBytes));
        const int width = metrics.horizontalAdvance(label);
        const double left = std::clamp(x - width / 2.0, double(area.left()), double(area.right() - width));
        painter.drawText(QPointF(left, labelBaseline), label);
    }
    painter.setPen(QPen(colors::oomMarker(), 2));
    for (const OomAnalysis& oom : device->ooms) {
        if (oom.eventIndex >= 0)
            painter.drawLine(
                QPointF(scale.xOf(oom.eventIndex), area.top()), QPointF(scale.xOf(oom.eventIndex), area.bottom()));
    }
}

} // namespace

TimelineThumbnail::TimelineThumbnail(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("timelineThumbnail"));
    setCursor(Qt::PointingHandCursor);
    setToolTip(QStringLiteral("Memory over the trace by category: click to open the timeline"));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    setFixedHeight(sizeHint().height());
}

void TimelineThumbnail::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_data = std::move(data);
    update();
}

QRect TimelineThumbnail::plotArea(const QString& topLabel) const
{
    const int text = fontMetrics().height();
    return rect().adjusted(fontMetrics().horizontalAdvance(topLabel) + 10, text / 2, -4, -text - 4);
}

void TimelineThumbnail::mouseReleaseEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton)
        emit activated();
}

void TimelineThumbnail::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().base());
    m_paintedColumns = 0;
    const int64_t count = m_data ? m_data->eventCount() : 0;
    const uint64_t top = m_data ? std::max<uint64_t>({ m_data->maxReserved(), m_data->maxAllocated(), 1 }) : 1;
    const QString topLabel = bytesText(top);
    const QRect area = plotArea(topLabel);
    if (count < 2 || area.width() < 2) {
        painter.setPen(palette().color(QPalette::PlaceholderText));
        painter.drawText(rect(), Qt::AlignCenter, QStringLiteral("No allocation history to draw"));
        return;
    }
    // One bucket of events per pixel column; the column shows its fullest state.
    const int columns = int(std::min<int64_t>(area.width(), count));
    std::vector<int64_t> boundaries;
    for (int c = 0; c <= columns; ++c)
        boundaries.push_back(count * c / columns);
    const ThumbnailScale scale { area, count, double(area.height()) / double(top) };
    const std::vector<TimelineData::Point> points = m_data->downsample(boundaries);
    m_paintedColumns = paintColumns(painter, scale, fullestPerColumn(points, columns, count));
    paintReservedLine(painter, scale, m_data->reservedPoints(boundaries));
    paintMarkers(painter, scale, m_data->device(), fontMetrics(), rect().bottom() - 2);
    // The scale: the top of the axis, and the frame.
    painter.setPen(palette().color(QPalette::Text));
    painter.drawText(QRect(0, area.top() - fontMetrics().height() / 2, area.left() - 6, fontMetrics().height()),
        Qt::AlignRight | Qt::AlignVCenter, topLabel);
    painter.drawText(QRect(0, area.bottom() - fontMetrics().height() / 2, area.left() - 6, fontMetrics().height()),
        Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("0"));
    painter.setPen(palette().color(QPalette::Mid));
    painter.drawRect(area.adjusted(0, 0, -1, 0));
    markStartup(StartupMark::TimelinePainted);
}

} // namespace oomlens
