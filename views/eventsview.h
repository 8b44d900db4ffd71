#pragma once

#include "views/plots/timelinedata.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;
class QTimer;

namespace oomlens {

class EventsModel;

// The raw trace of one device, filterable by action and by stack text; selecting a row moves
// the time cursor there and back.
class EventsView : public QWidget
{
    Q_OBJECT
public:
    explicit EventsView(QWidget* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    void setEvent(int64_t event);
    // Applies a filter now (the text box waits for a pause in typing).
    void setFilter(unsigned actions, const QString& text);
    EventsModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    int64_t selectedEvent() const;
    void focusSearch();

signals:
    void cursorRequested(int64_t event);

private:
    void applyFilter();

    EventsModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QComboBox* m_actions = nullptr;
    QLineEdit* m_text = nullptr;
    QLabel* m_count = nullptr;
    QTimer* m_filterTimer = nullptr;
    int64_t m_cursor = -1;
    bool m_following = false;
};

} // namespace oomlens
