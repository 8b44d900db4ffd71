#pragma once

#include "views/plots/timelinedata.h"

#include <QWidget>

#include <memory>

class QButtonGroup;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;
class QTimer;
class QTreeView;

namespace oomlens {

class AllocationsModel;
class CallTreeModel;

// What is live at one moment — the time cursor, the peak or the OOM — as a table biggest first
// or as a call tree of live bytes by frame; one text filter searches categories, phases and
// every frame of the stacks in both.
class LiveAllocationsView : public QWidget
{
    Q_OBJECT
public:
    enum class Moment { Cursor, Peak, Oom };
    enum class Display { Table, CallTree };

    explicit LiveAllocationsView(QWidget* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    // The time cursor moved; followed in Cursor mode only.
    void setEvent(int64_t event);
    void setMoment(Moment moment);
    Moment moment() const { return m_moment; }
    void setDisplay(Display display);
    Display display() const { return m_display; }
    // The event whose live set is shown (-1: before the first event).
    int64_t shownEvent() const;
    // Applies the filter now instead of after the typing pause.
    void setFilterText(const QString& text);

    AllocationsModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    CallTreeModel* callTree() const { return m_tree; }
    QSortFilterProxyModel* treeProxy() const { return m_treeProxy; }
    QLineEdit* filter() const { return m_filter; }

signals:
    void cursorRequested(int64_t event);

private:
    // The constructor's parts: the moment and display toggles with the filter, the table, the
    // call tree, and the signals between them.
    QHBoxLayout* buildBar();
    void buildTable();
    void buildTree();
    void connectControls();
    void refresh();
    void refreshTree();
    void applyFilter();
    int64_t oomEvent() const;

    std::shared_ptr<const TimelineData> m_data;
    Moment m_moment = Moment::Cursor;
    Display m_display = Display::Table;
    int64_t m_cursor = -1;
    int64_t m_treeEvent = -2; // the moment the call tree was built for; -2: stale
    AllocationsModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    CallTreeModel* m_tree = nullptr;
    QSortFilterProxyModel* m_treeProxy = nullptr;
    QStackedWidget* m_pages = nullptr;
    QTableView* m_table = nullptr;
    QTreeView* m_treeView = nullptr;
    QLineEdit* m_filter = nullptr;
    QTimer* m_filterTimer = nullptr;
    QLabel* m_header = nullptr;
    QButtonGroup* m_moments = nullptr;
    QButtonGroup* m_displays = nullptr;
};

} // namespace oomlens
