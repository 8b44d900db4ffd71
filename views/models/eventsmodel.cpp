#include "views/models/eventsmodel.h"

#include "core/analysis/poolowners.h"

#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <algorithm>
#include <array>

namespace oomlens {

namespace {

// Built once: data() is called for every visible cell on every scroll step.
const QString& actionText(TraceAction action)
{
    static const auto names = [] {
        std::array<QString, size_t(TraceAction::Unknown) + 1> result;
        for (size_t i = 0; i < result.size(); ++i)
            result[i] = toQString(traceActionName(TraceAction(i)));
        return result;
    }();
    return names[std::min(size_t(action), names.size() - 1)];
}

} // namespace

EventsModel::EventsModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

unsigned EventsModel::groupOf(TraceAction action)
{
    switch (action) {
    case TraceAction::Alloc:
        return Allocs;
    case TraceAction::FreeRequested:
    case TraceAction::FreeCompleted:
    case TraceAction::Free:
        return Frees;
    case TraceAction::SegmentAlloc:
    case TraceAction::SegmentFree:
    case TraceAction::SegmentMap:
    case TraceAction::SegmentUnmap:
        return Segments;
    case TraceAction::Oom:
        return Ooms;
    case TraceAction::Snapshot:
    case TraceAction::UserDefined:
    case TraceAction::Annotate:
    case TraceAction::Unknown:
        break;
    }
    return Markers;
}

void EventsModel::setTimeline(std::shared_ptr<const TimelineData> data)
{
    beginResetModel();
    m_data = std::move(data);
    m_pools = m_data && m_data->device() ? privatePools(m_data->snapshot(), *m_data->device()) : PrivatePools {};
    m_filtered = false;
    m_rows.clear();
    m_rows.shrink_to_fit();
    m_locations.clear();
    endResetModel();
}

void EventsModel::setFilter(unsigned actions, const QString& text)
{
    beginResetModel();
    m_rows.clear();
    m_filtered = (actions & AllActions) != AllActions || !text.isEmpty();
    if (m_filtered && m_data && m_data->trace()) {
        const Snapshot& snapshot = m_data->snapshot();
        // Decide once per distinct frame and stack, then the pass over the events is a lookup.
        std::vector<uint8_t> stackMatches;
        if (!text.isEmpty()) {
            const FrameTable& frames = *snapshot.frames;
            std::vector<uint8_t> frameMatches(frames.frameCount(), 0);
            for (size_t f = 0; f < frameMatches.size(); ++f) {
                const Frame& frame = frames.frame(FrameId(uint32_t(f)));
                frameMatches[f] = toQString(snapshot.strings->get(frame.name)).contains(text, Qt::CaseInsensitive)
                    || toQString(snapshot.strings->get(frame.filename)).contains(text, Qt::CaseInsensitive);
            }
            stackMatches.assign(frames.stackCount(), 0);
            for (size_t s = 0; s < stackMatches.size(); ++s) {
                for (FrameId frame : frames.stack(StackId(uint32_t(s)))) {
                    if (frameMatches[frame.value]) {
                        stackMatches[s] = 1;
                        break;
                    }
                }
            }
        }
        // Named spans whose name holds the text: every event inside one matches, whatever its
        // stack, so "ProfilerStep#3" or "Optimizer.step" selects that step's or that call's events.
        std::vector<std::pair<int64_t, int64_t>> spanRanges;
        if (!text.isEmpty()) {
            for (const AnnotationSpan& span : m_data->annotationSpans()) {
                if (!span.mark && span.lastEvent >= span.firstEvent
                    && toQString(span.name).contains(text, Qt::CaseInsensitive))
                    spanRanges.emplace_back(span.firstEvent, span.lastEvent);
            }
            std::sort(spanRanges.begin(), spanRanges.end());
        }
        const auto& events = m_data->trace()->events;
        size_t nextSpan = 0;
        int64_t insideUntil = -1; // last event of the matching spans begun so far
        for (size_t i = 0; i < events.size(); ++i) {
            const auto event = int64_t(i);
            while (nextSpan < spanRanges.size() && spanRanges[nextSpan].first <= event)
                insideUntil = std::max(insideUntil, spanRanges[nextSpan++].second);
            if (!(groupOf(events[i].action) & actions))
                continue;
            if (!text.isEmpty() && event > insideUntil) {
                const uint32_t stack = events[i].stack.value;
                if (stack >= stackMatches.size() || !stackMatches[stack])
                    continue;
            }
            m_rows.push_back(uint32_t(i));
        }
    }
    endResetModel();
}

int64_t EventsModel::eventAt(int row) const
{
    if (row < 0)
        return -1;
    if (!m_filtered)
        return row < rowCount() ? row : -1;
    return size_t(row) < m_rows.size() ? int64_t(m_rows[size_t(row)]) : -1;
}

int EventsModel::rowAtOrBefore(int64_t event) const
{
    if (!m_data || event < 0)
        return -1;
    if (!m_filtered)
        return int(std::min<int64_t>(event, int64_t(rowCount()) - 1));
    const auto it = std::upper_bound(m_rows.begin(), m_rows.end(), uint64_t(event));
    return int(it - m_rows.begin()) - 1;
}

// The pool the entry records (newest PyTorch writes pool_id), else, where the snapshot has
// private pools, the pool of the allocation's block as the dump knows it.
QString EventsModel::poolText(const TraceEvent& event, const Allocation* allocation) const
{
    std::optional<PoolId> pool = m_data->snapshot().poolOf(event);
    if (!pool && allocation && m_pools.hasPrivate())
        pool = m_pools.poolOf(*allocation);
    if (!pool)
        return QString();
    return pool->isDefault() ? QStringLiteral("default") : toQString(poolLabel(m_pools, *pool));
}

const QString& EventsModel::locationOf(StackId stack) const
{
    auto it = m_locations.constFind(stack.value);
    if (it == m_locations.constEnd()) {
        const Snapshot& snapshot = m_data->snapshot();
        it = m_locations.insert(stack.value, topFrameText(*snapshot.frames, *snapshot.strings, stack));
    }
    return *it;
}

int EventsModel::rowCount(const QModelIndex& parent) const
{
    if (parent.isValid() || !m_data)
        return 0;
    return m_filtered ? int(m_rows.size()) : int(m_data->eventCount());
}

int EventsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !m_data)
        return {};
    const int64_t row = eventAt(index.row());
    const TraceEvent& event = m_data->trace()->events[size_t(row)];
    const int32_t allocationIndex = m_data->allocationOfEvent(row);
    const Allocation* allocation
        = allocationIndex >= 0 ? &m_data->device()->allocations[size_t(allocationIndex)] : nullptr;
    const bool hasAddress = event.action != TraceAction::Oom && event.action != TraceAction::Snapshot;

    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case IndexColumn:
            return QString::number(row);
        case TimeColumn:
            return m_data->hasTime() ? durationText(m_data->timeOf(row)) : QStringLiteral("—");
        case ActionColumn:
            return actionText(event.action);
        case SizeColumn:
            return event.size ? bytesText(event.size) : QString();
        case AddressColumn:
            return hasAddress ? QString(QStringLiteral("0x") + QString::number(event.addr, 16)) : QString();
        case CategoryColumn:
            return allocation ? categoryText(allocation->category) : QString();
        case PoolColumn:
            return poolText(event, allocation);
        case LocationColumn:
            return locationOf(event.stack);
        }
        break;
    case SortRole:
    case EventRole:
        return qlonglong(row);
    case BytesRole:
        return qulonglong(event.size);
    case Qt::DecorationRole:
        if (index.column() == CategoryColumn && allocation)
            return colors::category(allocation->category);
        break;
    case Qt::ForegroundRole:
        if (event.action == TraceAction::Oom)
            return colors::oomMarker();
        break;
    case Qt::ToolTipRole:
        if (index.column() == LocationColumn) {
            const Snapshot& snapshot = m_data->snapshot();
            return stackText(*snapshot.frames, *snapshot.strings, event.stack, 16);
        }
        break;
    case Qt::TextAlignmentRole:
        if (index.column() == IndexColumn || index.column() == SizeColumn || index.column() == TimeColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    }
    return {};
}

QVariant EventsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case IndexColumn:
        return QStringLiteral("#");
    case TimeColumn:
        return QStringLiteral("Time");
    case ActionColumn:
        return QStringLiteral("Action");
    case SizeColumn:
        return QStringLiteral("Size");
    case AddressColumn:
        return QStringLiteral("Address");
    case CategoryColumn:
        return QStringLiteral("Category");
    case PoolColumn:
        return QStringLiteral("Pool");
    case LocationColumn:
        return QStringLiteral("Location");
    }
    return {};
}

} // namespace oomlens
