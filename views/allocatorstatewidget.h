#pragma once

#include "core/analysis/allocatorstate.h"
#include "views/timelinedata.h"

#include <QWidget>

#include <memory>

class QLabel;
class QScrollArea;

namespace oomlens {

// Paints the caching allocator's segments at one moment, one row per segment, blocks coloured
// by category and free space left blank, so fragmentation is visible at a glance.
class SegmentCanvas : public QWidget
{
    Q_OBJECT
public:
    explicit SegmentCanvas(QWidget* parent = nullptr);
    void setState(std::shared_ptr<const TimelineData> data, AllocatorState state);
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    static constexpr int rowHeight = 18;
    static constexpr int labelWidth = 170;
    std::shared_ptr<const TimelineData> m_data;
    AllocatorState m_state;
};

class AllocatorStateWidget : public QWidget
{
    Q_OBJECT
public:
    explicit AllocatorStateWidget(QWidget* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    void setEvent(int64_t event);
    const AllocatorState& state() const { return m_state; }

private:
    std::shared_ptr<const TimelineData> m_data;
    AllocatorState m_state;
    QLabel* m_summary = nullptr;
    SegmentCanvas* m_canvas = nullptr;
};

} // namespace oomlens
