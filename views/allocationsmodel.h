#pragma once

#include "views/timelinedata.h"

#include <QAbstractTableModel>

#include <QHash>

#include <memory>
#include <vector>

namespace oomlens {

// The allocations live at one moment of a device's trace (the time cursor, the peak, the OOM).
class AllocationsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Columns {
        SizeColumn,
        CategoryColumn,
        PhaseColumn,
        StepColumn,
        AllocatedAtColumn,
        LocationColumn,
        ColumnCount
    };
    enum Roles { SortRole = Qt::UserRole, BytesRole, AllocationRole, FilterRole };

    explicit AllocationsModel(QObject* parent = nullptr);
    // Shows what is live right after `event` (-1: before the first event).
    void setMoment(std::shared_ptr<const TimelineData> data, int64_t event);
    void clear();
    uint64_t totalBytes() const { return m_totalBytes; }
    int64_t moment() const { return m_event; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const TimelineData> m_data;
    std::vector<int32_t> m_rows; // indices into DeviceAnalysis::allocations
    // Search text per stack: thousands of live allocations share a few hundred stacks, and the
    // filter proxy asks for every row on each keystroke.
    mutable QHash<uint32_t, QString> m_stackText;
    int64_t m_event = -1;
    uint64_t m_totalBytes = 0;
};

} // namespace oomlens
