#pragma once

#include "views/timelinedata.h"

#include <QWidget>

#include <memory>

class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace oomlens {

class AllocationsModel;

// What is live at the time cursor, biggest first, filterable by category, phase or stack text.
class LiveAllocationsView : public QWidget
{
    Q_OBJECT
public:
    explicit LiveAllocationsView(QWidget* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    void setEvent(int64_t event);
    AllocationsModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QLineEdit* filter() const { return m_filter; }

signals:
    void cursorRequested(int64_t event);

private:
    std::shared_ptr<const TimelineData> m_data;
    AllocationsModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_table = nullptr;
    QLineEdit* m_filter = nullptr;
    QLabel* m_header = nullptr;
};

} // namespace oomlens
