#pragma once

#include "views/timelinedata.h"

#include <QWidget>

#include <memory>

class QTableView;

namespace oomlens {

class EventsModel;

// The raw trace of one device; selecting a row moves the time cursor there and back.
class EventsView : public QWidget
{
    Q_OBJECT
public:
    explicit EventsView(QWidget* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    void setEvent(int64_t event);
    EventsModel* model() const { return m_model; }
    int64_t selectedEvent() const;

signals:
    void cursorRequested(int64_t event);

private:
    EventsModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    bool m_following = false;
};

} // namespace oomlens
