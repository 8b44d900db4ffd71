#include "views/eventsmodel.h"

#include "views/categorycolors.h"
#include "views/viewutil.h"

namespace oomlens {

EventsModel::EventsModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void EventsModel::setTimeline(std::shared_ptr<const TimelineData> data)
{
    beginResetModel();
    m_data = std::move(data);
    endResetModel();
}

int EventsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() || !m_data ? 0 : int(m_data->eventCount());
}

int EventsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !m_data)
        return {};
    const int64_t row = index.row();
    const TraceEvent& event = m_data->trace()->events[size_t(row)];
    const int32_t allocationIndex = m_data->allocationOfEvent(row);
    const Allocation* allocation
        = allocationIndex >= 0 ? &m_data->device()->allocations[size_t(allocationIndex)] : nullptr;
    const Snapshot& snapshot = m_data->snapshot();
    const bool hasAddress = event.action != TraceAction::Oom && event.action != TraceAction::Snapshot;

    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case IndexColumn:
            return QString::number(row);
        case TimeColumn:
            return m_data->hasTime() ? durationText(m_data->timeOf(row)) : QStringLiteral("—");
        case ActionColumn:
            return toQString(traceActionName(event.action));
        case SizeColumn:
            return event.size ? bytesText(event.size) : QString();
        case AddressColumn:
            return hasAddress ? QString(QStringLiteral("0x") + QString::number(event.addr, 16)) : QString();
        case CategoryColumn:
            return allocation ? categoryText(allocation->category) : QString();
        case LocationColumn:
            return topFrameText(*snapshot.frames, *snapshot.strings, event.stack);
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
        if (index.column() == LocationColumn)
            return stackText(*snapshot.frames, *snapshot.strings, event.stack, 16);
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
    case LocationColumn:
        return QStringLiteral("Location");
    }
    return {};
}

} // namespace oomlens
