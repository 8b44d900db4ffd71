#pragma once

#include "core/job/jobsummary.h"

#include <QWidget>

class QCustomPlot;
class QCPBars;
class QLabel;

namespace oomlens {

// One column per rank: its peak allocated bytes stacked by category in the timeline's colours,
// its peak reserved as a tick, the card's capacity drawn across when known, and the failing rank
// marked (as "closest" when no rank ran out of memory). A click on a column selects that rank.
class JobBars : public QWidget
{
    Q_OBJECT
public:
    explicit JobBars(QWidget* parent = nullptr);

    void setJob(const JobSummary& job);
    QCustomPlot* plot() const { return m_plot; }
    // The capacity drawn across, 0 when none is known (or the ranks' cards differ).
    uint64_t capacityShown() const { return m_capacity; }
    // The x position of each rank's column: its index in JobSummary::ranks.
    static double columnOf(size_t rankIndex) { return static_cast<double>(rankIndex); }

signals:
    void rankClicked(int rankIndex);
    void rankDoubleClicked(int rankIndex);

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    int rankAt(const QPoint& position) const;

    JobSummary m_job;
    QCustomPlot* m_plot = nullptr;
    QLabel* m_legend = nullptr;
    uint64_t m_capacity = 0;
};

} // namespace oomlens
