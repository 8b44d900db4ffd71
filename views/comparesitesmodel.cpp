#include "views/comparesitesmodel.h"

#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QFont>

#include <cstdlib>

namespace oomlens {

CompareSitesModel::CompareSitesModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void CompareSitesModel::setComparison(std::shared_ptr<const Comparison> comparison)
{
    beginResetModel();
    m_comparison = std::move(comparison);
    endResetModel();
}

const ComparedSite* CompareSitesModel::site(int row) const
{
    if (!m_comparison || row < 0 || size_t(row) >= m_comparison->sites.size())
        return nullptr;
    return &m_comparison->sites[size_t(row)];
}

QString CompareSitesModel::fullStack(int row) const
{
    const ComparedSite* compared = site(row);
    if (!compared)
        return {};
    const bool useB = compared->stackB != FrameTable::emptyStack();
    const auto& snapshot = useB ? m_comparison->b.snapshot : m_comparison->a.snapshot;
    const StackId stack = useB ? compared->stackB : compared->stackA;
    if (!snapshot || stack == FrameTable::emptyStack()) {
        QStringList frames;
        for (const std::string& frame : compared->key.frames)
            frames << toQString(frame);
        return frames.isEmpty() ? QStringLiteral("(no stack recorded)") : frames.join(QLatin1Char('\n'));
    }
    return stackSearchText(*snapshot->frames, *snapshot->strings, stack).trimmed();
}

int CompareSitesModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() || !m_comparison ? 0 : int(m_comparison->sites.size());
}

int CompareSitesModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CompareSitesModel::data(const QModelIndex& index, int role) const
{
    const ComparedSite* compared = site(index.row());
    if (!compared)
        return {};
    const int64_t delta = compared->peakDelta();
    const int64_t allocatedDelta = compared->allocatedDelta();
    const QString status = compared->isNew() ? QStringLiteral("new in %1").arg(toQString(m_comparison->b.label))
        : compared->vanished()               ? QStringLiteral("gone in %1").arg(toQString(m_comparison->b.label))
                                             : QString();
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case SiteColumn:
            return toQString(siteLabel(compared->key));
        case CategoryColumn:
            return categoryText(compared->key.category);
        case PhaseColumn:
            return phaseText(compared->key.phase);
        case AColumn:
            return bytesText(compared->a.peakBytes);
        case BColumn:
            return bytesText(compared->b.peakBytes);
        case DeltaColumn:
            return bytesDeltaText(delta);
        case AllocatedDeltaColumn:
            return bytesDeltaText(allocatedDelta);
        case StatusColumn:
            return status;
        }
        break;
    case SortRole:
        switch (index.column()) {
        case SiteColumn:
            return toQString(siteLabel(compared->key));
        case CategoryColumn:
            return categoryText(compared->key.category);
        case PhaseColumn:
            return phaseText(compared->key.phase);
        case AColumn:
            return qulonglong(compared->a.peakBytes);
        case BColumn:
            return qulonglong(compared->b.peakBytes);
        case DeltaColumn:
            return qulonglong(std::llabs(delta));
        case AllocatedDeltaColumn:
            return qulonglong(std::llabs(allocatedDelta));
        case StatusColumn:
            return status;
        }
        break;
    case SignedDeltaRole:
        return qlonglong(delta);
    case Qt::DecorationRole:
        if (index.column() == CategoryColumn)
            return colors::category(compared->key.category);
        break;
    case Qt::FontRole:
        if (compared->isNew() || compared->vanished()) {
            QFont font;
            font.setBold(compared->isNew());
            font.setItalic(compared->vanished());
            return font;
        }
        break;
    case Qt::TextAlignmentRole:
        if (index.column() >= AColumn && index.column() <= AllocatedDeltaColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case Qt::ToolTipRole:
        return QStringLiteral("%1\n\nDouble-click for the whole stack.")
            .arg(fullStack(index.row()).section(QLatin1Char('\n'), 0, 11));
    }
    return {};
}

QVariant CompareSitesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case SiteColumn:
        return QStringLiteral("Site");
    case CategoryColumn:
        return QStringLiteral("Category");
    case PhaseColumn:
        return QStringLiteral("Phase");
    case AColumn:
        return QStringLiteral("%1 at peak").arg(m_comparison ? toQString(m_comparison->a.label) : QStringLiteral("A"));
    case BColumn:
        return QStringLiteral("%1 at peak").arg(m_comparison ? toQString(m_comparison->b.label) : QStringLiteral("B"));
    case DeltaColumn:
        return QStringLiteral("Δ at peak");
    case AllocatedDeltaColumn:
        return QStringLiteral("Δ allocated");
    case StatusColumn:
        return QStringLiteral("New / gone");
    }
    return {};
}

} // namespace oomlens
