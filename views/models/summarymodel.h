#pragma once

#include "core/textinputs.h"

#include <QAbstractTableModel>

#include <string>
#include <vector>

namespace oomlens {

// One memory_summary() table: a row per metric with current / peak / allocated / freed.
class SummaryModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Columns { MetricColumn, CurrentColumn, PeakColumn, AllocatedColumn, FreedColumn, ColumnCount };
    enum Roles { SortRole = Qt::UserRole, RawValueRole };

    explicit SummaryModel(QObject* parent = nullptr);
    void setSummary(const MemorySummary& summary);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // "allocated_memory" -> "Allocated memory"; memory rows hold bytes, the others counts.
    static QString metricText(const std::string& metric);
    static bool isByteMetric(const std::string& metric);

private:
    struct Row
    {
        std::string metric;
        SummaryRow values;
    };
    std::vector<Row> m_rows;
};

} // namespace oomlens
