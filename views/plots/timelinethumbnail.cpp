#include "views/plots/timelinethumbnail.h"

#include "views/categorycolors.h"
#include "views/startuptrace.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace oomlens {

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
    const std::vector<TimelineData::Point> points = m_data->downsample(boundaries);
    std::vector<const TimelineData::Point*> fullest(size_t(columns), nullptr);
    for (const TimelineData::Point& point : points) {
        const size_t column = size_t(std::clamp<int64_t>(point.event * columns / count, 0, columns - 1));
        if (!fullest[column] || point.total() > fullest[column]->total())
            fullest[column] = &point;
    }
    const double scale = double(area.height()) / double(top);
    const double columnWidth = double(area.width()) / columns;
    const auto xOf = [&](int64_t event) { return area.left() + double(event) * area.width() / double(count); };
    const CategoryBytes* last = nullptr;
    for (int c = 0; c < columns; ++c) {
        // A column no event fell in keeps the state before it (the trace's step function).
        const CategoryBytes* bytes = fullest[size_t(c)] ? &fullest[size_t(c)]->bytes : last;
        last = bytes;
        if (!bytes)
            continue;
        double bottom = area.bottom() + 1;
        for (Category category : TimelineWidget::stackOrder) {
            const double height = double((*bytes)[size_t(category)]) * scale;
            if (height <= 0)
                continue;
            painter.fillRect(QRectF(area.left() + c * columnWidth, bottom - height, columnWidth + 0.5, height),
                colors::category(category));
            bottom -= height;
        }
        ++m_paintedColumns;
    }
    // Reserved as a step line over the bands.
    const auto reserved = m_data->reservedPoints(boundaries);
    if (!reserved.empty()) {
        QPolygonF line;
        for (const auto& point : reserved) {
            const double y = area.bottom() + 1 - double(point.bytes) * scale;
            const double x = xOf(std::max<int64_t>(point.event, 0));
            if (!line.isEmpty())
                line << QPointF(x, line.back().y());
            line << QPointF(x, y);
        }
        line << QPointF(area.right(), line.back().y());
        painter.setPen(QPen(colors::reservedLine(), 1.5));
        painter.drawPolyline(line);
    }
    // The peak and the OOM events, as the timeline marks them.
    const DeviceAnalysis* device = m_data->device();
    if (device && device->peakEvent >= 0) {
        const double x = xOf(device->peakEvent);
        painter.setPen(QPen(colors::peakMarker(), 1, Qt::DashLine));
        painter.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
        const QString label = QStringLiteral("peak %1").arg(bytesText(device->peakAllocatedBytes));
        const int width = fontMetrics().horizontalAdvance(label);
        const double left = std::clamp(x - width / 2.0, double(area.left()), double(area.right() - width));
        painter.drawText(QPointF(left, rect().bottom() - 2), label);
    }
    if (device) {
        painter.setPen(QPen(colors::oomMarker(), 2));
        for (const OomAnalysis& oom : device->ooms) {
            if (oom.eventIndex >= 0)
                painter.drawLine(QPointF(xOf(oom.eventIndex), area.top()), QPointF(xOf(oom.eventIndex), area.bottom()));
        }
    }
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
