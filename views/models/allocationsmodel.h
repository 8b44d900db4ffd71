#pragma once

#include "core/analysis/generatedcodeframes.h"
#include "core/analysis/privatepools.h"
#include "views/plots/timelinedata.h"

#include <QAbstractTableModel>

#include <QHash>

#include <memory>
#include <optional>
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
        PoolColumn, // the allocator pool of its block: default, a CUDA graph's or a MemPool
        CompiledColumn, // the torch.compile region it ran in
        NotesColumn, // what torch.cuda.memory._annotate_tensor attached to it by this moment
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
    // What data() answers per role and column, for the allocation at a row.
    QVariant displayText(const Allocation& allocation, int32_t allocationIndex, int column) const;
    QVariant sortKey(const Allocation& allocation, int32_t allocationIndex, int column) const;
    QString filterText(const Allocation& allocation, int32_t allocationIndex) const;
    QString toolTip(const Allocation& allocation, int32_t allocationIndex) const;
    QString compiledToolTip(const Allocation& allocation) const;
    QString locationText(const Allocation& allocation) const;
    QString poolText(const Allocation& allocation) const;
    QString compiledText(const Allocation& allocation) const;
    QString annotationText(int32_t allocationIndex) const;
    QString notesText(int32_t allocationIndex) const;

    std::shared_ptr<const TimelineData> m_data;
    PrivatePools m_pools; // derived once per timeline: which pool each block is in
    std::optional<GeneratedCodeFrames> m_generated; // once per timeline: torch.compile's frames
    std::vector<int32_t> m_rows; // indices into DeviceAnalysis::allocations
    // Search text per stack: thousands of live allocations share a few hundred stacks, and the
    // filter proxy asks for every row on each keystroke.
    mutable QHash<uint32_t, QString> m_stackText;
    mutable QHash<int32_t, QString> m_annotationText; // per allocation: spans and metadata it was made in
    int64_t m_event = -1;
    uint64_t m_totalBytes = 0;
};

} // namespace oomlens
