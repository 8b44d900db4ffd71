#include "views/models/summarymodel.h"

#include "views/viewutil.h"

#include <QLocale>

#include <array>

namespace oomlens {

namespace {

// memory_summary()'s own row order, so the table reads like the printout.
constexpr std::array<std::string_view, 11> metricOrder = { "allocated_memory", "active_memory", "requested_memory",
    "gpu_reserved_memory", "non_releasable_memory", "allocations", "active_allocs", "gpu_reserved_segments",
    "non_releasable_allocs", "oversize_allocations", "oversize_gpu_segments" };

size_t orderOf(const std::string& metric)
{
    for (size_t i = 0; i < metricOrder.size(); ++i) {
        if (metricOrder[i] == metric)
            return i;
    }
    return metricOrder.size();
}

} // namespace

SummaryModel::SummaryModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void SummaryModel::setSummary(const MemorySummary& summary)
{
    beginResetModel();
    m_rows.clear();
    for (const auto& [metric, values] : summary.rows)
        m_rows.push_back({ metric, values });
    std::stable_sort(
        m_rows.begin(), m_rows.end(), [](const Row& a, const Row& b) { return orderOf(a.metric) < orderOf(b.metric); });
    endResetModel();
}

bool SummaryModel::isByteMetric(const std::string& metric)
{
    return metric.ends_with("_memory");
}

QString SummaryModel::metricText(const std::string& metric)
{
    QString text = toQString(metric);
    text.replace(QLatin1Char('_'), QLatin1Char(' '));
    text.replace(QStringLiteral("gpu"), QStringLiteral("GPU"));
    if (!text.isEmpty())
        text[0] = text[0].toUpper();
    return text;
}

int SummaryModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int SummaryModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant SummaryModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row& row = m_rows[size_t(index.row())];
    if (index.column() == MetricColumn) {
        if (role == Qt::DisplayRole)
            return metricText(row.metric);
        if (role == SortRole)
            return qulonglong(orderOf(row.metric));
        if (role == RawValueRole)
            return toQString(row.metric);
        return {};
    }
    const std::optional<uint64_t>* value = nullptr;
    switch (index.column()) {
    case CurrentColumn:
        value = &row.values.current;
        break;
    case PeakColumn:
        value = &row.values.peak;
        break;
    case AllocatedColumn:
        value = &row.values.allocated;
        break;
    case FreedColumn:
        value = &row.values.freed;
        break;
    }
    if (!value)
        return {};
    switch (role) {
    case Qt::DisplayRole:
        if (!*value)
            return QStringLiteral("—");
        if (isByteMetric(row.metric))
            return bytesText(**value);
        return QLocale().toString(qulonglong(**value));
    case SortRole:
    case RawValueRole:
        return *value ? QVariant(qulonglong(**value)) : QVariant();
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
    return {};
}

QVariant SummaryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case MetricColumn:
        return QStringLiteral("Metric");
    case CurrentColumn:
        return QStringLiteral("Current");
    case PeakColumn:
        return QStringLiteral("Peak");
    case AllocatedColumn:
        return QStringLiteral("Total allocated");
    case FreedColumn:
        return QStringLiteral("Total freed");
    }
    return {};
}

} // namespace oomlens
