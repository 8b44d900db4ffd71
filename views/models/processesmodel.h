#pragma once

#include "core/textinputs.h"

#include <QAbstractTableModel>

#include <optional>
#include <vector>

namespace oomlens {

// Processes holding GPU memory, from nvidia-smi tables and from the OOM message's
// "Process N has X memory in use" clauses: who else was on the card.
class ProcessesModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Columns { SourceColumn, GpuColumn, PidColumn, NameColumn, MemoryColumn, ColumnCount };
    enum Roles { SortRole = Qt::UserRole, BytesRole };

    explicit ProcessesModel(QObject* parent = nullptr);
    void setFindings(const TextFindings& findings);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Row
    {
        QString source;
        std::optional<int> gpu;
        std::optional<int64_t> pid;
        QString name;
        std::optional<uint64_t> bytes;
    };
    std::vector<Row> m_rows;
};

} // namespace oomlens
