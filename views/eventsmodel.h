#pragma once

#include "views/timelinedata.h"

#include <QAbstractTableModel>

#include <memory>

namespace oomlens {

// Every trace event of one device, in order. Rows are produced on demand, so a
// 3M-event trace costs nothing until scrolled to.
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
        LocationColumn,
        ColumnCount
    };
    enum Roles { SortRole = Qt::UserRole, EventRole, BytesRole };

    explicit EventsModel(QObject* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const TimelineData> m_data;
};

} // namespace oomlens
