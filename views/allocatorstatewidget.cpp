#include "views/allocatorstatewidget.h"

#include "core/analysis/poolowners.h"
#include "core/analysis/privatepools.h"

#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QToolTip>
#include <QVBoxLayout>

#include <map>

namespace oomlens {

namespace {

// "graph 1" / "mempool 2": the pool of a segment of a private pool, as short as the row allows.
QString poolTag(PoolId pool)
{
    switch (poolOwner(pool)) {
    case PoolOwner::Default:
        return {};
    case PoolOwner::CudaGraph:
        return QStringLiteral("graph %1").arg(pool.first);
    case PoolOwner::MemPool:
        return QStringLiteral("mempool %1").arg(pool.second);
    }
    return {};
}

// " · vLLM KV cache": what a private pool holds, when its blocks' stacks say.
QString holderTag(const SegmentCanvas::PoolHolders& holders, PoolId pool)
{
    const auto it = holders.find({ pool.first, pool.second });
    return it == holders.end() ? QString() : QStringLiteral(" \u00b7 ") + it->second;
}

QString overallLine(const AllocatorState& state)
{
    uint64_t free = 0, largest = 0;
    for (const StateSegment& segment : state.segments) {
        free += segment.freeBytes;
        largest = std::max(largest, segment.largestFree);
    }
    return QStringLiteral("<b>Allocator state after event #%1</b>: %2 segments, reserved %3, in blocks %4, "
                          "free %5, largest free block <b>%6</b>")
        .arg(state.event)
        .arg(state.segments.size())
        .arg(bytesText(state.reservedBytes), bytesText(state.activeBytes), bytesText(free), bytesText(largest));
}

QString privatePoolsLine(const AllocatorState& state)
{
    uint64_t reserved = 0, free = 0;
    size_t segments = 0;
    for (const StateSegment& segment : state.segments) {
        if (segment.pool.isDefault())
            continue;
        ++segments;
        reserved += segment.size;
        free += segment.freeBytes;
    }
    if (segments == 0)
        return {};
    return QStringLiteral("<br>Private pools (CUDA graphs, MemPools; hatched): %1 segments, reserved %2, "
                          "free but held %3 (only their own graph or pool can use it)")
        .arg(segments)
        .arg(bytesText(reserved), bytesText(free));
}

QString pendingFreesLine(const AllocatorState& state)
{
    uint64_t pending = 0;
    size_t blocks = 0;
    for (const StateSegment& segment : state.segments) {
        for (const StateBlock& block : segment.blocks) {
            if (block.pendingFree) {
                pending += block.size;
                ++blocks;
            }
        }
    }
    if (blocks == 0)
        return {};
    return QStringLiteral("<br>Pending frees (cross-hatched): %1 blocks, %2 freed by the program but not yet "
                          "reusable (another stream may still use them)")
        .arg(blocks)
        .arg(bytesText(pending));
}

// A cached block serves only requests of its own stream.
QString freePerStreamLine(const AllocatorState& state)
{
    std::map<int64_t, uint64_t> freeByStream;
    for (const StateSegment& segment : state.segments)
        freeByStream[segment.stream] += segment.freeBytes;
    if (freeByStream.size() <= 1)
        return {};
    QStringList parts;
    for (const auto& [stream, bytes] : freeByStream)
        parts << QStringLiteral("stream %1: %2").arg(stream).arg(bytesText(bytes));
    return QStringLiteral("<br>Free per stream (a block serves only its own stream): ")
        + parts.join(QStringLiteral(", "));
}

} // namespace

SegmentCanvas::SegmentCanvas(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
}

void SegmentCanvas::setState(std::shared_ptr<const TimelineData> data, AllocatorState state)
{
    m_data = std::move(data);
    m_state = std::move(state);
    updateGeometry();
    resize(width(), sizeHint().height());
    update();
}

QSize SegmentCanvas::sizeHint() const
{
    return { 600, std::max(1, int(m_state.segments.size())) * rowHeight + 4 };
}

void SegmentCanvas::paintEvent(QPaintEvent* event)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().color(QPalette::Base));
    if (!m_data || m_state.segments.empty()) {
        painter.drawText(rect(), Qt::AlignCenter, QStringLiteral("No segments at this moment"));
        return;
    }
    const int barWidth = std::max(50, width() - labelWidth - 8);
    const int firstRow = std::max(0, event->rect().top() / rowHeight);
    const int lastRow = std::min(int(m_state.segments.size()) - 1, event->rect().bottom() / rowHeight);
    const auto& allocations = m_data->device()->allocations;
    for (int row = firstRow; row <= lastRow; ++row) {
        const StateSegment& segment = m_state.segments[size_t(row)];
        const int y = row * rowHeight + 2;
        painter.setPen(palette().color(QPalette::Text));
        painter.drawText(QRect(4, y, labelWidth - 8, rowHeight - 2), Qt::AlignVCenter | Qt::AlignLeft,
            QStringLiteral("%1 %2%3%4")
                .arg(bytesText(segment.size), segment.isLargePool ? QString() : QStringLiteral("small "),
                    segment.stream ? QStringLiteral("s%1 ").arg(segment.stream) : QString(),
                    poolTag(segment.pool) + holderTag(m_holders, segment.pool)));
        const QRect bar(labelWidth, y + 2, barWidth, rowHeight - 6);
        painter.fillRect(bar, colors::freeBlock());
        // A private pool's free space is reserved for its graph or MemPool alone: hatched.
        if (!segment.pool.isDefault())
            painter.fillRect(bar, QBrush(palette().color(QPalette::Mid), Qt::BDiagPattern));
        for (const StateBlock& block : segment.blocks) {
            if (segment.size == 0)
                break;
            const double start = double(block.address - segment.address) / double(segment.size);
            const double length = double(block.size) / double(segment.size);
            const int x0 = bar.left() + int(start * bar.width());
            const int w = std::max(1, int(length * bar.width()));
            QColor color = block.allocation >= 0 && size_t(block.allocation) < allocations.size()
                ? colors::category(allocations[size_t(block.allocation)].category)
                : colors::category(Category::Unknown);
            if (block.pendingFree)
                color.setAlpha(120);
            painter.fillRect(QRect(x0, bar.top(), w, bar.height()), color);
            // Freed by the program, waiting for another stream: cross-hatched like the timeline's band.
            if (block.pendingFree)
                painter.fillRect(QRect(x0, bar.top(), w, bar.height()),
                    QBrush(palette().color(QPalette::Text), Qt::DiagCrossPattern));
        }
        painter.setPen(palette().color(QPalette::Mid));
        painter.drawRect(bar.adjusted(0, 0, -1, -1));
    }
}

bool SegmentCanvas::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip && m_data) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int row = help->pos().y() / rowHeight;
        if (row >= 0 && size_t(row) < m_state.segments.size()) {
            const StateSegment& segment = m_state.segments[size_t(row)];
            QString text = QStringLiteral("Segment 0x%1: %2, %3 free, largest free block %4")
                               .arg(QString::number(segment.address, 16), bytesText(segment.size),
                                   bytesText(segment.freeBytes), bytesText(segment.largestFree));
            const int barWidth = std::max(50, width() - labelWidth - 8);
            const double offset = double(help->pos().x() - labelWidth) / barWidth * double(segment.size);
            for (const StateBlock& block : segment.blocks) {
                const double start = double(block.address - segment.address);
                if (offset >= start && offset < start + double(block.size) && block.allocation >= 0) {
                    const Allocation& allocation = m_data->device()->allocations[size_t(block.allocation)];
                    const Snapshot& snapshot = m_data->snapshot();
                    text += QStringLiteral("\n\nBlock %1 — %2%3\n%4")
                                .arg(bytesText(block.size), categoryText(allocation.category),
                                    block.pendingFree
                                        ? QStringLiteral(" (freed, pending: another stream may still use it)")
                                        : QString(),
                                    stackText(*snapshot.frames, *snapshot.strings, allocation.stack, 8));
                    break;
                }
            }
            QToolTip::showText(help->globalPos(), text, this);
        } else {
            QToolTip::hideText();
        }
        return true;
    }
    return QWidget::event(event);
}

AllocatorStateWidget::AllocatorStateWidget(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    layout->addWidget(m_summary);
    auto* scroll = new QScrollArea(this);
    m_canvas = new SegmentCanvas;
    scroll->setWidget(m_canvas);
    scroll->setWidgetResizable(true);
    layout->addWidget(scroll, 1);
    // A request that waited for a dropped job starts once that job is done.
    connect(&m_jobs, &JobTracker::idle, this, &AllocatorStateWidget::startWaiting);
}

void AllocatorStateWidget::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_data = std::move(data);
    m_jobs.dropAll();
    m_state = {};
    m_hasState = false;
    m_holders.clear();
    if (m_data && m_data->device()) {
        for (const PoolAtDump& pool : privatePools(m_data->snapshot(), *m_data->device()).pools) {
            if (pool.isPrivate() && pool.heldBy.role != PoolRole::Unknown)
                m_holders[{ pool.id.first, pool.id.second }] = toQString(poolHolderShort(pool.heldBy));
        }
    }
    m_canvas->setPoolHolders(m_holders);
    m_canvas->setState(m_data, m_state);
    m_requested = -1;
    if (!m_data || !m_data->device()) {
        m_waiting = false;
        m_summary->setText(QStringLiteral("No snapshot"));
        return;
    }
    setEvent(m_data->device()->peakEvent);
}

void AllocatorStateWidget::setEvent(int64_t event)
{
    if (!m_data || !m_data->device())
        return;
    m_requested = event;
    if (m_jobs.isRunning()) {
        m_waiting = true; // started when the running job hands in its result
        m_summary->setText(summaryText());
        return;
    }
    start(event);
}

bool AllocatorStateWidget::isBusy() const
{
    return m_jobs.isRunning() || m_waiting;
}

// A job holds its own reference to the timeline; the widget does not wait for it.
void AllocatorStateWidget::start(int64_t event)
{
    m_waiting = false;
    auto work = [data = m_data, event](
                    const JobContext&) { return allocatorStateAt(data->snapshot(), *data->device(), event); };
    m_jobs.start(std::move(work), [this](AllocatorState state) {
        // Start the newest request first, so it computes while this result is painted.
        startWaiting();
        showState(std::move(state));
    });
    m_summary->setText(summaryText());
}

void AllocatorStateWidget::startWaiting()
{
    if (m_waiting)
        start(m_requested);
}

void AllocatorStateWidget::showState(AllocatorState state)
{
    m_state = std::move(state);
    m_hasState = true;
    m_summary->setText(summaryText());
    m_canvas->setState(m_data, m_state);
    emit stateShown(m_state.event);
}

QString AllocatorStateWidget::summaryText() const
{
    if (!m_data || !m_data->device())
        return QStringLiteral("No snapshot");
    if (!m_hasState)
        return QStringLiteral("Rebuilding the allocator state after event #%1…").arg(m_requested);
    QString text
        = overallLine(m_state) + privatePoolsLine(m_state) + pendingFreesLine(m_state) + freePerStreamLine(m_state);
    for (const auto& [id, holder] : m_holders)
        text += QStringLiteral("<br>%1 holds %2").arg(toQString(poolName(PoolId { id.first, id.second })), holder);
    if (m_state.event != m_requested)
        text += QStringLiteral(" <span style='color:gray'>· updating to #%1…</span>").arg(m_requested);
    return text;
}

} // namespace oomlens
