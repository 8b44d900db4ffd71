#include "views/calltreemodel.h"

#include "core/analysis/userframe.h"

#include "views/viewutil.h"

namespace oomlens {

CallTreeModel::CallTreeModel(QObject* parent)
    : QAbstractItemModel(parent)
{ }

void CallTreeModel::clear()
{
    setTree(nullptr, {});
}

void CallTreeModel::setTree(std::shared_ptr<const Snapshot> snapshot, CallTreeNode root)
{
    beginResetModel();
    m_snapshot = std::move(snapshot);
    m_root = std::move(root);
    m_nodes.clear();
    m_topLevel.clear();
    if (m_snapshot) {
        for (const CallTreeNode& child : m_root.children)
            flatten(child, -1, m_topLevel);
    }
    endResetModel();
}

void CallTreeModel::flatten(const CallTreeNode& node, int parent, std::vector<int>& siblings)
{
    const int self = int(m_nodes.size());
    m_nodes.push_back({ &node, parent, int(siblings.size()), {} });
    siblings.push_back(self);
    // m_nodes may reallocate while the children are added: collect their indices separately.
    std::vector<int> children;
    children.reserve(node.children.size());
    for (const CallTreeNode& child : node.children)
        flatten(child, self, children);
    m_nodes[size_t(self)].children = std::move(children);
}

const CallTreeModel::Node* CallTreeModel::nodeOf(const QModelIndex& index) const
{
    if (!index.isValid() || index.internalId() >= m_nodes.size())
        return nullptr;
    return &m_nodes[index.internalId()];
}

QModelIndex CallTreeModel::index(int row, int column, const QModelIndex& parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return {};
    const std::vector<int>* siblings = &m_topLevel;
    if (parent.isValid()) {
        const Node* node = nodeOf(parent);
        if (!node || parent.column() != 0)
            return {};
        siblings = &node->children;
    }
    if (size_t(row) >= siblings->size())
        return {};
    return createIndex(row, column, quintptr((*siblings)[size_t(row)]));
}

QModelIndex CallTreeModel::parent(const QModelIndex& child) const
{
    const Node* node = nodeOf(child);
    if (!node || node->parent < 0)
        return {};
    const Node& parent = m_nodes[size_t(node->parent)];
    return createIndex(parent.row, 0, quintptr(node->parent));
}

int CallTreeModel::rowCount(const QModelIndex& parent) const
{
    if (!parent.isValid())
        return int(m_topLevel.size());
    if (parent.column() != 0)
        return 0;
    const Node* node = nodeOf(parent);
    return node ? int(node->children.size()) : 0;
}

int CallTreeModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

QVariant CallTreeModel::data(const QModelIndex& index, int role) const
{
    const Node* flat = nodeOf(index);
    if (!flat || !m_snapshot)
        return {};
    const CallTreeNode& node = *flat->node;
    const Frame& frame = m_snapshot->frames->frame(node.frame);
    // torch.compile's generated code: the model lines that produced the node are its callers here.
    const bool generated = isCompilerGeneratedFile(m_snapshot->strings->get(frame.filename));
    const auto function = [&]() -> QString {
        const QString name = toQString(m_snapshot->strings->get(frame.name));
        return generated ? name + QStringLiteral(" [torch.compile generated]") : name;
    };
    const auto location = [&]() -> QString {
        return toQString(m_snapshot->strings->get(frame.filename)) + QLatin1Char(':') + QString::number(frame.line);
    };
    const double share = m_root.bytes ? 100.0 * double(node.bytes) / double(m_root.bytes) : 0.0;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case FunctionColumn:
            return function();
        case LocationColumn:
            return location();
        case BytesColumn:
            return bytesText(node.bytes);
        case ShareColumn:
            return QStringLiteral("%1%").arg(share, 0, 'f', 1);
        case CountColumn:
            return QString::number(node.count);
        }
        break;
    case SortRole:
        switch (index.column()) {
        case FunctionColumn:
            return function();
        case LocationColumn:
            return location();
        case CountColumn:
            return node.count;
        default:
            return qulonglong(node.bytes);
        }
    case BytesRole:
        return qulonglong(node.bytes);
    case FilterRole:
        return QString(function() + QLatin1Char(' ') + location());
    case Qt::ToolTipRole:
        return QStringLiteral("%1\n%2\n%3 live in %4 allocation(s) below this frame (%5% of all live bytes)%6")
            .arg(function(), location(), bytesText(node.bytes))
            .arg(node.count)
            .arg(share, 0, 'f', 1)
            .arg(generated ? QStringLiteral("\nInductor's output code of a compiled region: the model source lines "
                                            "that produced these FX nodes are the frames just above it")
                           : QString());
    case Qt::TextAlignmentRole:
        if (index.column() >= BytesColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    }
    return {};
}

QVariant CallTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case FunctionColumn:
        return QStringLiteral("Function");
    case LocationColumn:
        return QStringLiteral("Location");
    case BytesColumn:
        return QStringLiteral("Live");
    case ShareColumn:
        return QStringLiteral("Share");
    case CountColumn:
        return QStringLiteral("Allocations");
    }
    return {};
}

} // namespace oomlens
