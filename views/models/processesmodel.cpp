#include "views/models/processesmodel.h"

#include "views/viewutil.h"

namespace oomlens {

ProcessesModel::ProcessesModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void ProcessesModel::setFindings(const TextFindings& findings)
{
    beginResetModel();
    m_rows.clear();
    for (const NvidiaSmiTable& table : findings.nvidiaSmi) {
        for (const GpuProcess& process : table.processes)
            m_rows.push_back(
                { QStringLiteral("nvidia-smi"), process.gpu, process.pid, toQString(process.name), process.bytes });
    }
    for (const OomMessage& message : findings.oomMessages) {
        for (const ProcessUsage& process : message.processes)
            m_rows.push_back({ QStringLiteral("OOM message"), message.device, process.pid,
                process.self ? QStringLiteral("this process") : QString(), process.bytes });
    }
    endResetModel();
}

int ProcessesModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int ProcessesModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ProcessesModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row& row = m_rows[size_t(index.row())];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case SourceColumn:
            return row.source;
        case GpuColumn:
            return row.gpu ? QString::number(*row.gpu) : QStringLiteral("—");
        case PidColumn:
            return row.pid ? QString::number(*row.pid) : QStringLiteral("—");
        case NameColumn:
            return row.name;
        case MemoryColumn:
            return row.bytes ? bytesText(*row.bytes) : QStringLiteral("not reported");
        }
    } else if (role == SortRole) {
        switch (index.column()) {
        case SourceColumn:
            return row.source;
        case GpuColumn:
            return row.gpu.value_or(-1);
        case PidColumn:
            return qlonglong(row.pid.value_or(-1));
        case NameColumn:
            return row.name;
        case MemoryColumn:
            return qulonglong(row.bytes.value_or(0));
        }
    } else if (role == BytesRole && index.column() == MemoryColumn) {
        return row.bytes ? QVariant(qulonglong(*row.bytes)) : QVariant();
    } else if (role == Qt::TextAlignmentRole && index.column() == MemoryColumn) {
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant ProcessesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case SourceColumn:
        return QStringLiteral("Source");
    case GpuColumn:
        return QStringLiteral("GPU");
    case PidColumn:
        return QStringLiteral("PID");
    case NameColumn:
        return QStringLiteral("Process");
    case MemoryColumn:
        return QStringLiteral("GPU memory");
    }
    return {};
}

} // namespace oomlens
