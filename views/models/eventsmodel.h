#pragma once

#include "core/analysis/privatepools.h"
#include "views/plots/timelinedata.h"

#include <QAbstractTableModel>
#include <QHash>

#include <memory>
#include <vector>

namespace oomlens {

// Every trace event of one device, in order, optionally narrowed to some actions and to events
// whose stack mentions a text. Rows are produced on demand and a filter is a sorted list of
// event indices, so a 3M-event trace costs nothing until scrolled to and filters in one pass.
class EventsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Columns {
        IndexColumn,
        TimeColumn,
        ActionColumn,
        SizeColumn,
        AddressColumn,
        CategoryColumn,
        PoolColumn,
        LocationColumn,
        ColumnCount
    };
    enum Roles { SortRole = Qt::UserRole, EventRole, BytesRole };

    // Groups of actions the filter offers; combine with |.
    enum ActionGroup : unsigned {
        Allocs = 1u << 0,
        Frees = 1u << 1,
        Segments = 1u << 2,
        Ooms = 1u << 3,
        Markers = 1u << 4, // snapshot, annotate, user-defined, unknown
        AllActions = 0x1f,
    };
    static unsigned groupOf(TraceAction action);

    explicit EventsModel(QObject* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    // Keeps events whose action is in `actions` and, when `text` is not empty, whose stack has
    // a frame (function or file, case-insensitive) containing it, or that lie inside a named
    // span (record_function range, annotation, ProfilerStep, user metadata) whose name does.
    void setFilter(unsigned actions, const QString& text);
    bool isFiltered() const { return m_filtered; }

    int64_t eventAt(int row) const;
    // The row of `event`, or of the last shown event before it; -1 when none.
    int rowAtOrBefore(int64_t event) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const QString& locationOf(StackId stack) const;
    QString poolText(const TraceEvent& event, const Allocation* allocation) const;

    std::shared_ptr<const TimelineData> m_data;
    bool m_filtered = false;
    std::vector<uint32_t> m_rows; // event indices when filtered
    PrivatePools m_pools; // derived once per timeline: the pool an entry records or its block is in
    // Top user frame per stack: a scrolled screen shows a few dozen stacks many times over.
    mutable QHash<uint32_t, QString> m_locations;
};

} // namespace oomlens
