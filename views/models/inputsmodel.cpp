#include "views/models/inputsmodel.h"

#include "core/presentation/labels.h"
#include "views/viewutil.h"

#include <QApplication>
#include <QStyle>

namespace oomlens {

InputsModel::InputsModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void InputsModel::setInputs(std::vector<CaseInput> inputs)
{
    beginResetModel();
    m_inputs = std::move(inputs);
    endResetModel();
}

int InputsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_inputs.size());
}

int InputsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant InputsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const CaseInput& input = m_inputs[size_t(index.row())];
    if (role == ErrorRole)
        return input.error ? toQString(*input.error) : QString();
    if (role == Qt::DisplayRole || role == SortRole || role == Qt::ToolTipRole) {
        switch (index.column()) {
        case KindColumn:
            return toQString(inputKindLabel(input.kind));
        case PathColumn:
            return input.path == "(pasted)" ? QStringLiteral("(pasted text)") : toQString(input.path);
        case StatusColumn:
            return input.error ? toQString(*input.error) : QStringLiteral("read");
        }
    }
    if (role == Qt::DecorationRole && index.column() == StatusColumn)
        return QApplication::style()->standardIcon(
            input.error ? QStyle::SP_MessageBoxWarning : QStyle::SP_DialogApplyButton);
    return {};
}

QVariant InputsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case KindColumn:
        return QStringLiteral("Kind");
    case PathColumn:
        return QStringLiteral("Input");
    case StatusColumn:
        return QStringLiteral("Status");
    }
    return {};
}

} // namespace oomlens
