#pragma once

#include "core/analysis/allocatorstate.h"
#include "views/jobtracker.h"
#include "views/plots/timelinedata.h"

#include <QWidget>

#include <map>
#include <memory>
#include <utility>

class QLabel;

namespace oomlens {

// Paints the caching allocator's segments at one moment, one row per segment, blocks coloured
// by category and free space left blank, so fragmentation is visible at a glance.
class SegmentCanvas : public QWidget
{
    Q_OBJECT
public:
    explicit SegmentCanvas(QWidget* parent = nullptr);
    void setState(std::shared_ptr<const TimelineData> data, AllocatorState state);
    // What each private pool holds ("vLLM KV cache"), by pool id, for the row labels.
    using PoolHolders = std::map<std::pair<int64_t, int64_t>, QString>;
    void setPoolHolders(PoolHolders holders) { m_holders = std::move(holders); }
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    static constexpr int rowHeight = 18;
    static constexpr int labelWidth = 230; // size, pool kind, stream and private pool
    std::shared_ptr<const TimelineData> m_data;
    AllocatorState m_state;
    PoolHolders m_holders;
};

// The allocator state at the time cursor. Rebuilding it walks the segment history (tens of ms on
// a big trace), so it is computed on the thread pool (a JobTracker job): at most one job runs, a
// cursor that moves meanwhile replaces the waiting request (dragging shows states as fast as they
// can be built, never a queue of old ones), and a job for a timeline that has since been replaced
// is dropped.
class AllocatorStateWidget : public QWidget
{
    Q_OBJECT
public:
    explicit AllocatorStateWidget(QWidget* parent = nullptr);
    void setTimeline(std::shared_ptr<const TimelineData> data);
    void setEvent(int64_t event);
    // The state on screen; state().event lags requestedEvent() while a job runs.
    const AllocatorState& state() const { return m_state; }
    int64_t requestedEvent() const { return m_requested; }
    bool isBusy() const;
    QString summaryText() const;

signals:
    // A computed state reached the screen.
    void stateShown(int64_t event);

private:
    void start(int64_t event);
    void startWaiting();
    void showState(AllocatorState state);

    std::shared_ptr<const TimelineData> m_data;
    AllocatorState m_state;
    SegmentCanvas::PoolHolders m_holders;
    QLabel* m_summary = nullptr;
    SegmentCanvas* m_canvas = nullptr;
    int64_t m_requested = -1;
    bool m_waiting = false; // m_requested still has to be started
    bool m_hasState = false; // m_state belongs to the current timeline
    // A dropped job still counts as running until it ends: one job at a time, even then.
    JobTracker m_jobs; // last: destroyed first, so that no result reaches the widgets
};

} // namespace oomlens
