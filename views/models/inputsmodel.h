#pragma once

#include "core/case.h"

#include <QAbstractTableModel>

namespace oomlens {

// The inputs of a case: what each file or paste was recognized as, or why it could not be read.
class InputsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Columns { KindColumn, PathColumn, StatusColumn, ColumnCount };
    enum Roles { SortRole = Qt::UserRole, ErrorRole };

    explicit InputsModel(QObject* parent = nullptr);
    void setInputs(std::vector<CaseInput> inputs);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<CaseInput> m_inputs;
};

} // namespace oomlens
