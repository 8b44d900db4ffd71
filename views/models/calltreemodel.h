#pragma once

#include "core/analysis/livequery.h"

#include <QAbstractItemModel>

#include <memory>
#include <vector>

namespace oomlens {

// Live bytes by call path at one moment, outermost caller first (heaptrack's "top-down" tree).
// The tree is flattened once per moment so parent() and index() are array lookups.
class CallTreeModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Columns { FunctionColumn, LocationColumn, BytesColumn, ShareColumn, CountColumn, ColumnCount };
    enum Roles { SortRole = Qt::UserRole, BytesRole, FilterRole };

    explicit CallTreeModel(QObject* parent = nullptr);
    // `snapshot` must outlive the model's use of the tree (the frames and strings it names).
    void setTree(std::shared_ptr<const Snapshot> snapshot, CallTreeNode root);
    void clear();
    uint64_t totalBytes() const { return m_root.bytes; }
    uint32_t totalCount() const { return m_root.count; }

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Node
    {
        const CallTreeNode* node;
        int parent; // flat index; -1 for the root's children
        int row;
        std::vector<int> children; // flat indices, largest first
    };
    void flatten(const CallTreeNode& node, int parent, std::vector<int>& siblings);
    const Node* nodeOf(const QModelIndex& index) const;

    std::shared_ptr<const Snapshot> m_snapshot;
    CallTreeNode m_root;
    std::vector<Node> m_nodes;
    std::vector<int> m_topLevel;
};

} // namespace oomlens
