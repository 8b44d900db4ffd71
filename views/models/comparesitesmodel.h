#pragma once

#include "core/compare/comparison.h"

#include <QAbstractTableModel>

#include <memory>

namespace oomlens {

// The matched sites of a comparison, one row each in core's order (largest |Δ at the peak| first).
// Qt::UserRole is the sort key: bytes for the byte columns, |Δ| for the delta columns (a change
// matters by its size whichever way it goes), so a proxy sorts them as the user expects.
class CompareSitesModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        SiteColumn,
        CategoryColumn,
        PhaseColumn,
        AColumn,
        BColumn,
        DeltaColumn,
        AllocatedDeltaColumn,
        StatusColumn,
        ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole;
    static constexpr int SignedDeltaRole = Qt::UserRole + 1; // Δ at the peak, signed (qlonglong)

    explicit CompareSitesModel(QObject* parent = nullptr);

    void setComparison(std::shared_ptr<const Comparison> comparison);
    const ComparedSite* site(int row) const;
    // Every frame of the site's stack (B's when B has it, else A's), innermost first.
    QString fullStack(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::shared_ptr<const Comparison> m_comparison;
};

} // namespace oomlens
