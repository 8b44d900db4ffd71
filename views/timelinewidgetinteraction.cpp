#include "views/timelinewidget.h"

#include "views/startuptrace.h"

#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QToolTip>
#include <qcustomplot.h>

#include <algorithm>

namespace oomlens {

namespace {

// "Event #N · time · phase · step N", and the named spans holding the event.
QString whenText(const TimelineData& data, int64_t event)
{
    QString html = QStringLiteral("<b>Event #%1</b>").arg(event);
    if (data.hasTime())
        html += QStringLiteral(" · ") + durationText(data.timeOf(event));
    const DeviceAnalysis* device = data.device();
    if (device && size_t(event) < device->eventPhase.size())
        html += QStringLiteral(" · ") + phaseText(device->eventPhase[size_t(event)]);
    if (device && size_t(event) < device->eventStep.size() && device->eventStep[size_t(event)] >= 0)
        html += QStringLiteral(" · step %1").arg(device->eventStep[size_t(event)]);
    const std::vector<const AnnotationSpan*> spans = spansAt(data.annotationSpans(), event);
    if (!spans.empty()) {
        QStringList names;
        for (const AnnotationSpan* span : spans)
            names << QString::fromUtf8(annotationLabel(span->name)).toHtmlEscaped();
        html += QStringLiteral("<br>in ") + names.join(QStringLiteral(" › "));
    }
    return html;
}

// The category band under the pointer (the first whose cumulative top reaches it), with its share.
QString bandUnderPointer(const CategoryBytes& stack, uint64_t allocated, double bytesAtPointer)
{
    uint64_t cumulative = 0;
    for (Category category : TimelineWidget::stackOrder) {
        const uint64_t bytes = stack[size_t(category)];
        cumulative += bytes;
        if (bytes > 0 && bytesAtPointer >= 0 && double(cumulative) >= bytesAtPointer) {
            return QStringLiteral("<br><span style='color:%1'>&#9632;</span> <b>%2</b>: %3 (%4%)")
                .arg(colors::category(category).name(), categoryText(category), bytesText(bytes))
                .arg(allocated ? 100.0 * double(bytes) / double(allocated) : 0.0, 0, 'f', 1);
        }
    }
    return {};
}

// The allocation an alloc or free event concerns: its category, why, and its notes.
QString allocationText(const TimelineData& data, int32_t allocationIndex)
{
    const DeviceAnalysis& device = *data.device();
    const Allocation& allocation = device.allocations[size_t(allocationIndex)];
    QString html = QStringLiteral(" — %1").arg(categoryText(allocation.category));
    if (allocation.olderThanTrace())
        html += QStringLiteral("<br><span style='color:gray'>allocated before the trace began (a \"ghost\" free: "
                               "its allocation fell out of the ring buffer)</span>");
    if (allocation.reason < device.reasons.size())
        html += QStringLiteral("<br><i>%1</i>").arg(toQString(device.reasons[allocation.reason]).toHtmlEscaped());
    for (const AllocationAnnotation* note : data.allocationAnnotations().of(allocationIndex))
        html += QStringLiteral("<br>annotated: <b>%1</b>").arg(toQString(note->text).toHtmlEscaped());
    return html;
}

// An annotate entry's note and the allocation it went to.
QString noteText(const TimelineData& data, const AllocationAnnotation& note)
{
    // The action line ends "annotate " (an annotate entry records no size): the note follows it.
    QString html = QStringLiteral("<b>%1</b>").arg(toQString(note.text).toHtmlEscaped());
    if (note.allocation >= 0 && data.device()) {
        const Allocation& allocation = data.device()->allocations[size_t(note.allocation)];
        html += QStringLiteral("<br>on the %1 %2 allocation at 0x%3")
                    .arg(bytesText(allocation.requestedSize), categoryText(allocation.category))
                    .arg(note.address, 0, 16);
    } else {
        html += QStringLiteral("<br><span style='color:gray'>on 0x%1, whose allocation the trace does not hold</span>")
                    .arg(note.address, 0, 16);
    }
    return html;
}

// Where the event came from: the torch.compile region and the stack.
QString sourceText(const Snapshot& snapshot, const TraceEvent& traceEvent)
{
    QString html;
    if (traceEvent.compileContext.isValid()) {
        html += QStringLiteral("<br>torch.compile: <b>%1</b>")
                    .arg(toQString(snapshot.strings->get(traceEvent.compileContext)).toHtmlEscaped());
        if (const QString model = topFrameText(*snapshot.frames, *snapshot.strings, traceEvent.stack); !model.isEmpty())
            html += QStringLiteral(", from %1").arg(model.toHtmlEscaped());
    }
    const QString frames = stackText(*snapshot.frames, *snapshot.strings, traceEvent.stack, 8);
    if (!frames.isEmpty())
        html += QStringLiteral("<pre style='margin:4px 0 0 0'>%1</pre>").arg(frames.toHtmlEscaped());
    return html;
}

} // namespace

QString TimelineWidget::describe(int64_t event, double bytesAtPointer) const
{
    if (!m_data || event < 0 || event >= m_data->eventCount())
        return {};
    const CategoryBytes stack = m_data->stackAt(event);
    const uint64_t allocated = total(stack);
    QString html = whenText(*m_data, event);
    html += QStringLiteral("<br>Allocated %1 · reserved %2")
                .arg(bytesText(allocated), bytesText(m_data->reservedAt(event)));
    if (m_pools.hasPrivate() && size_t(event) < m_pools.privateReservedAfter.size())
        html += QStringLiteral(" · in private pools %1").arg(bytesText(m_pools.privateReservedAfter[size_t(event)]));
    if (const uint64_t pending = m_pending.pendingAt(event); pending > 0)
        html += QStringLiteral(" · pending frees %1").arg(bytesText(pending));
    html += bandUnderPointer(stack, allocated, bytesAtPointer);

    const TraceEvent& traceEvent = m_data->trace()->events[size_t(event)];
    html += QStringLiteral("<hr>%1 %2")
                .arg(toQString(traceActionName(traceEvent.action)),
                    traceEvent.size ? bytesText(traceEvent.size) : QString());
    if (const int32_t allocationIndex = m_data->allocationOfEvent(event); allocationIndex >= 0 && m_data->device())
        html += allocationText(*m_data, allocationIndex);
    if (const AllocationAnnotation* note = m_data->allocationAnnotations().atEvent(event))
        html += noteText(*m_data, *note);
    return html + sourceText(m_data->snapshot(), traceEvent);
}

void TimelineWidget::onMouseMove(QMouseEvent* event)
{
    if (!m_data || event->buttons() != Qt::NoButton || !m_plot->axisRect()->rect().contains(event->pos())) {
        return;
    }
    const int64_t index = eventAt(m_plot->xAxis->pixelToCoord(event->position().x()));
    const double bytes = m_plot->yAxis->pixelToCoord(event->position().y());
    QToolTip::showText(event->globalPosition().toPoint(), describe(index, bytes), m_plot);
}

void TimelineWidget::onMousePress(QMouseEvent* event)
{
    m_pressPos = event->pos();
    // Plain drag pans; Shift+drag draws a rectangle to zoom into.
    m_plot->setSelectionRectMode(event->modifiers() & Qt::ShiftModifier ? QCP::srmZoom : QCP::srmNone);
}

void TimelineWidget::onMouseRelease(QMouseEvent* event)
{
    m_plot->setSelectionRectMode(QCP::srmNone);
    if (event->button() == Qt::LeftButton && (event->pos() - m_pressPos).manhattanLength() < 4
        && m_plot->axisRect()->rect().contains(event->pos()))
        setCursorEvent(eventAt(m_plot->xAxis->pixelToCoord(event->position().x())));
}

bool TimelineWidget::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::Paint && m_data && !m_noHistory)
        markStartup(StartupMark::TimelinePainted);
    if (watched == m_plot && event->type() == QEvent::KeyPress && m_data) {
        auto* key = static_cast<QKeyEvent*>(event);
        QCPRange range = m_plot->xAxis->range();
        switch (key->key()) {
        case Qt::Key_Left:
        case Qt::Key_Right: {
            if (key->modifiers() & Qt::ShiftModifier) {
                setCursorEvent(std::max<int64_t>(0, m_cursorEvent) + (key->key() == Qt::Key_Left ? -1 : 1));
                return true;
            }
            const double step = range.size() / 8 * (key->key() == Qt::Key_Left ? -1 : 1);
            m_plot->xAxis->setRange(range.lower + step, range.upper + step);
            return true;
        }
        case Qt::Key_Plus:
        case Qt::Key_Equal:
        case Qt::Key_Up:
            m_plot->xAxis->scaleRange(0.7,
                m_cursorEvent >= 0 && range.contains(keyOf(m_cursorEvent)) ? keyOf(m_cursorEvent) : range.center());
            return true;
        case Qt::Key_Minus:
        case Qt::Key_Down:
            m_plot->xAxis->scaleRange(1 / 0.7, range.center());
            return true;
        case Qt::Key_Home:
        case Qt::Key_0:
            resetZoom();
            return true;
        default:
            break;
        }
    }
    if (watched == m_plot && event->type() == QEvent::Resize)
        QMetaObject::invokeMethod(this, &TimelineWidget::rebuildVisible, Qt::QueuedConnection);
    return QWidget::eventFilter(watched, event);
}

} // namespace oomlens
